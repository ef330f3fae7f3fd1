package resources_test

import (
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

func newStore() metadata.Store { return memstore.New(memstore.DefaultOptions()) }
