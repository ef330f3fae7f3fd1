package storage_test

import (
	"testing"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
)

func TestMemoryConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Storage { return storage.NewMemory() })
}
