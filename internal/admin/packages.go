package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// The packages management API (Pulsar's v3 Packages resource and PackagesBase):
//
//	/admin/v3/packages/{type}/{tenant}/{namespace}                      GET: package names
//	/admin/v3/packages/{type}/{tenant}/{namespace}/{name}               GET: versions
//	/admin/v3/packages/{type}/{tenant}/{namespace}/{name}/{version}     POST (multipart
//	    "file" and "metadata"): upload; GET: download; DELETE
//	/admin/v3/packages/{type}/{tenant}/{namespace}/{name}/{version}/metadata   GET, PUT
//
// and the same under /admin/v2 (pulsaradmin's default version, as the functions worker
// serves). The bytes go to PackageBlobs (ledgers), the metadata to resources; a version is
// written once (upload of an existing one fails) and its metadata replaced in place.
// Pulsar's answers: a bad name or type is 412, a missing package 404, and, as Pulsar's
// PackagesManagementImpl throws NotFoundException for it, an existing one too (with the
// text "Package '...' metadata already exists"). The packages permission is checked by
// Secure (secure.go: 401 with Pulsar's text).

// PackageBlobs stores package bytes; functions/pkgstore.Ledgers is the one the
// compositions pass, so packages and function packages share one ledger format.
type PackageBlobs interface {
	Put(ctx context.Context, r io.Reader, limit int64, meta map[string]string) (ids []int64, size int64, digest string, err error)
	WriteTo(ctx context.Context, ids []int64, w io.Writer) error
	Delete(ctx context.Context, ids []int64) error
}

// errPackagesOff is the 503 of a broker without enablePackagesManagement.
var errPackagesOff = fmt.Errorf("%w: packages management is not enabled on this broker (enablePackagesManagement)", ErrUnavailable)

// errPackageTooLarge is an upload over packagesMaxSizeMB (413).
var errPackageTooLarge = errors.New("admin: package too large")

// maxMetadataPart bounds the "metadata" part of an upload.
const maxMetadataPart = 64 << 10

func (s *server) registerPackages(mux *http.ServeMux) {
	for _, v := range []string{"v3", "v2"} {
		base := "/admin/" + v + "/packages/{type}/{tenant}/{namespace}"
		pkg := base + "/{name}/{version}"
		mux.HandleFunc("GET "+base, s.handle(s.listPackages))
		mux.HandleFunc("GET "+base+"/{name}", s.handle(s.listPackageVersions))
		mux.HandleFunc("POST "+pkg, s.handle(s.uploadPackage))
		mux.HandleFunc("GET "+pkg, s.downloadPackage)
		mux.HandleFunc("DELETE "+pkg, s.handle(s.deletePackage))
		mux.HandleFunc("GET "+pkg+"/metadata", s.handle(s.getPackageMetadata))
		mux.HandleFunc("PUT "+pkg+"/metadata", s.handle(s.updatePackageMetadata))
	}
}

// packageOf is the package the path names, checked (412 if malformed).
func (s *server) packageOf(r *http.Request) (resources.PackageName, error) {
	if s.packages == nil {
		return resources.PackageName{}, errPackagesOff
	}
	n := resources.PackageName{Type: r.PathValue("type"), Tenant: r.PathValue("tenant"), Namespace: r.PathValue("namespace"),
		Name: r.PathValue("name"), Version: r.PathValue("version")}
	if n.Name == "" {
		n.Name = "x" // listing a namespace: only type, tenant and namespace are checked
	}
	if n.Version == "" {
		n.Version = "latest"
	}
	if err := n.Check(); err != nil {
		return n, badPackageName(err)
	}
	return n, nil
}

// badPackageName is Pulsar's 412 for a name PackageName refuses, with its text.
func badPackageName(err error) error {
	return withReason(strings.TrimPrefix(err.Error(), resources.ErrInvalid.Error()+": "), fmt.Errorf("%w: %w", ErrNotAllowed, err))
}

// packageMissing is Pulsar's 404 for a package version that is not there.
func packageMissing(n resources.PackageName, err error) error {
	if errors.Is(err, resources.ErrNotFound) {
		return withReason(fmt.Sprintf("Package '%s' metadata does not exist", n), err)
	}
	return err
}

func (s *server) listPackages(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	return s.res.Packages(ctx, n.Type, n.Tenant, n.Namespace)
}

func (s *server) listPackageVersions(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	return s.res.PackageVersions(ctx, n)
}

func (s *server) getPackageMetadata(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	rec, err := s.res.Package(ctx, n)
	if err != nil {
		return nil, packageMissing(n, err)
	}
	return rec.Metadata, nil
}

func (s *server) updatePackageMetadata(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	var m resources.PackageMetadata
	if err := decodeBody(r, &m); err != nil {
		return nil, err
	}
	return nil, packageMissing(n, s.res.UpdatePackageMetadata(ctx, n, m))
}

func (s *server) deletePackage(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	// The record first: once it is gone nobody reads the ledgers, and a failure deleting
	// them leaves unreferenced ledgers (logged), never a record naming deleted ones.
	rec, err := s.res.DeletePackage(ctx, n)
	if err != nil {
		if errors.Is(err, resources.ErrNotFound) {
			return nil, withReason(fmt.Sprintf("Package '%s' does not exist", n), err)
		}
		return nil, err
	}
	if err := s.packages.Delete(context.WithoutCancel(ctx), rec.Ledgers); err != nil {
		s.log.Warn("package deleted, its ledgers not", "package", n.String(), "ledgers", rec.Ledgers, "err", err)
	}
	return nil, nil
}

// uploadPackage streams the multipart "file" part into ledgers (cut off at
// packagesMaxSizeMB) and then records the package with the "metadata" part. The parts may
// come in either order; nothing of the file is held in memory beyond one ledger entry.
func (s *server) uploadPackage(ctx context.Context, r *http.Request) (any, error) {
	n, err := s.packageOf(r)
	if err != nil {
		return nil, err
	}
	exists := func() error {
		if _, err := s.res.Package(ctx, n); err == nil {
			return withReason(fmt.Sprintf("Package '%s' metadata already exists", n), resources.ErrNotFound)
		} else if !errors.Is(err, resources.ErrNotFound) {
			return err
		}
		return nil
	}
	if err := exists(); err != nil {
		return nil, err // before reading a byte of the upload
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		return nil, fmt.Errorf("%w: an upload is multipart/form-data with parts \"file\" and \"metadata\"", ErrBadRequest)
	}
	// The whole body is bounded too: the file's bound plus room for the other parts.
	r.Body = http.MaxBytesReader(nil, r.Body, s.packagesMaxBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	var (
		meta   resources.PackageMetadata
		rec    resources.PackageRecord
		stored bool
	)
	drop := func() {
		if stored {
			if err := s.packages.Delete(context.WithoutCancel(ctx), rec.Ledgers); err != nil {
				s.log.Warn("failed upload: its ledgers not deleted", "package", n.String(), "ledgers", rec.Ledgers, "err", err)
			}
		}
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			drop()
			return nil, fmt.Errorf("%w: reading the upload: %v", ErrBadRequest, err)
		}
		switch part.FormName() {
		case "metadata":
			b, err := io.ReadAll(io.LimitReader(part, maxMetadataPart+1))
			if err == nil && len(b) > maxMetadataPart {
				err = fmt.Errorf("over %d bytes", maxMetadataPart)
			}
			if err == nil && len(b) > 0 {
				err = json.Unmarshal(b, &meta)
			}
			if err != nil {
				drop()
				return nil, fmt.Errorf("%w: the metadata part: %v", ErrBadRequest, err)
			}
		case "file":
			if stored {
				drop()
				return nil, fmt.Errorf("%w: more than one file part", ErrBadRequest)
			}
			body := &boundedReader{r: part, left: s.packagesMaxBytes}
			ids, size, digest, err := s.packages.Put(ctx, body, s.packagesMaxBytes,
				map[string]string{"component": "package", "package": n.String()})
			switch {
			case body.over:
				return nil, fmt.Errorf("%w: over %d bytes (packagesMaxSizeMB)", errPackageTooLarge, s.packagesMaxBytes)
			case body.failed != nil: // the client's side: a torn or oversized body
				return nil, fmt.Errorf("%w: reading the upload: %v", ErrBadRequest, body.failed)
			case err != nil && body.eof && body.read == 0:
				return nil, fmt.Errorf("%w: the package file is empty", ErrBadRequest)
			case err != nil:
				return nil, err
			}
			rec = resources.PackageRecord{Ledgers: ids, Size: size, SHA256: digest, FileName: part.FileName()}
			stored = true
		}
	}
	if !stored {
		return nil, fmt.Errorf("%w: the upload has no \"file\" part", ErrBadRequest)
	}
	rec.Metadata = meta
	rec.Metadata.CreateTime, rec.Metadata.ModificationTime = 0, 0 // the broker's clock
	if err := s.res.CreatePackage(ctx, n, rec); err != nil {
		drop()
		if errors.Is(err, resources.ErrAlreadyExists) { // uploaded meanwhile
			return nil, exists()
		}
		return nil, err
	}
	return nil, nil
}

// boundedReader fails a read past left bytes (so Put stops at the bound) and remembers it,
// whether it reached the end, and a failure reading the request.
type boundedReader struct {
	r          io.Reader
	left, read int64
	over, eof  bool
	failed     error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < int64(len(p)) {
		p = p[:b.left+1] // one byte more tells a file of exactly the bound from a larger one
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if int64(n) > b.left {
		b.over = true
		return 0, errPackageTooLarge
	}
	b.left -= int64(n)
	b.eof = b.eof || errors.Is(err, io.EOF)
	if err != nil && !errors.Is(err, io.EOF) {
		b.failed = err
	}
	return n, err
}

// downloadPackage streams the package's bytes. A failure once they flow cannot change the
// status: the connection is cut, so the client sees a short body, never a whole one.
func (s *server) downloadPackage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	n, err := s.packageOf(r)
	var rec resources.PackageRecord
	if err == nil {
		rec, err = s.res.Package(ctx, n)
		if errors.Is(err, resources.ErrNotFound) {
			err = withReason(fmt.Sprintf("Package '%s' does not exist", n), err)
		}
	}
	if err != nil {
		if statusFor(err) >= 500 {
			s.log.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		writeError(w, r, err)
		return
	}
	out := &startedWriter{w: w, size: rec.Size}
	if err := s.packages.WriteTo(ctx, rec.Ledgers, out); err != nil {
		if !out.started { // nothing sent yet: a proper error answer
			s.log.Error("package download failed", "package", n.String(), "err", err)
			writeError(w, r, err)
			return
		}
		s.log.Warn("package download cut off", "package", n.String(), "err", err)
		panic(http.ErrAbortHandler)
	}
}

// startedWriter sends a download's headers with its first bytes, so a failure before any
// byte can still be answered with an error status.
type startedWriter struct {
	w       http.ResponseWriter
	size    int64
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // an empty write would send the headers (and a 200) already
	}
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/octet-stream")
		s.w.Header().Set("Content-Length", strconv.FormatInt(s.size, 10))
	}
	return s.w.Write(p)
}
