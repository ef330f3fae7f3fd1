package functions

import "github.com/magnetar-io/magnetar/internal/functions/pkgstore"

var (
	errTooLargeBlob = pkgstore.ErrTooLarge
	errEmptyBlob    = pkgstore.ErrEmpty
)
