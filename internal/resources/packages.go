package resources

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// The packages management records (/admin/v3/packages, Pulsar's PackagesManagement):
//
//	/packages/{type}/{tenant}/{namespace}/{name}/{version}    PackageRecord
//
// with name and version path-escaped (each is one key segment). The bytes are in ledgers
// (internal/functions/pkgstore, passed to the admin API by the composition root); a record
// names them, so it is written after they are and deleted before them.
const packagesPrefix = PackagesRoot

// The package types of Pulsar's PackageType.
var packageTypes = []string{"function", "sink", "source"}

// PackageName is type://tenant/namespace/name@version (Pulsar's PackageName).
type PackageName struct {
	Type, Tenant, Namespace, Name, Version string
}

// String is the package's URL, with Pulsar's "latest" for an empty version.
func (n PackageName) String() string {
	return fmt.Sprintf("%s://%s/%s/%s@%s", n.Type, n.Tenant, n.Namespace, n.Name, n.versionOrLatest())
}

func (n PackageName) versionOrLatest() string {
	if n.Version == "" {
		return "latest"
	}
	return n.Version
}

// ParsePackageName reads type://tenant/namespace/name[@version] as Pulsar's PackageName does
// (no version: "latest"); anything else is ErrInvalid, with Pulsar's wording.
func ParsePackageName(s string) (PackageName, error) {
	typ, rest, ok := strings.Cut(s, "://")
	if !ok {
		return PackageName{}, fmt.Errorf("%w: Invalid package name '%s'", ErrInvalid, s)
	}
	path, version, _ := strings.Cut(rest, "@")
	parts := strings.Split(path, "/")
	if len(parts) != 3 || strings.Contains(version, "@") {
		return PackageName{}, fmt.Errorf("%w: Invalid package name '%s'", ErrInvalid, s)
	}
	n := PackageName{Type: typ, Tenant: parts[0], Namespace: parts[1], Name: parts[2], Version: version}
	n.Version = n.versionOrLatest()
	return n, n.Check()
}

// Check validates each part: a known type (any case, as Pulsar), tenant and namespace
// names, and a name and version that are one non-empty segment each.
func (n *PackageName) Check() error {
	t := strings.ToLower(n.Type)
	found := false
	for _, pt := range packageTypes {
		found = found || pt == t
	}
	if !found {
		return fmt.Errorf("%w: Invalid package domain: '%s'", ErrInvalid, n.Type)
	}
	n.Type = t
	if !validName(n.Tenant) || !validName(n.Namespace) {
		return fmt.Errorf("%w: Invalid package name '%s'", ErrInvalid, n)
	}
	for _, p := range []string{n.Name, n.Version} {
		if p == "" || strings.ContainsAny(p, "/@") || len(p) > 255 {
			return fmt.Errorf("%w: Invalid package name '%s'", ErrInvalid, n)
		}
	}
	return nil
}

// PackageMetadata is Pulsar's PackageMetadata JSON.
type PackageMetadata struct {
	Description      string            `json:"description,omitempty"`
	Contact          string            `json:"contact,omitempty"`
	CreateTime       int64             `json:"createTime,omitempty"`
	ModificationTime int64             `json:"modificationTime,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
}

// PackageRecord is one stored package version: its metadata and where its bytes are.
type PackageRecord struct {
	Metadata PackageMetadata `json:"metadata"`
	Ledgers  []int64         `json:"ledgers"`
	Size     int64           `json:"size"`
	SHA256   string          `json:"sha256"`
	FileName string          `json:"fileName,omitempty"`
}

func packageDir(typ, tenant, ns string) string {
	return packagesPrefix + typ + "/" + tenant + "/" + ns + "/"
}

func packageKey(n PackageName) string {
	return packageDir(n.Type, n.Tenant, n.Namespace) + url.PathEscape(n.Name) + "/" + url.PathEscape(n.versionOrLatest())
}

// CreatePackage records a package version; ErrAlreadyExists if it is recorded already.
func (r *Resources) CreatePackage(ctx context.Context, n PackageName, rec PackageRecord) error {
	if err := n.Check(); err != nil {
		return err
	}
	if rec.Metadata.CreateTime == 0 {
		rec.Metadata.CreateTime = time.Now().UnixMilli()
	}
	return r.create(ctx, packageKey(n), rec)
}

// Package returns a package version's record; ErrNotFound if there is none.
func (r *Resources) Package(ctx context.Context, n PackageName) (PackageRecord, error) {
	var rec PackageRecord
	if err := n.Check(); err != nil {
		return rec, err
	}
	_, err := r.get(ctx, packageKey(n), &rec)
	return rec, err
}

// UpdatePackageMetadata replaces a package version's metadata (its createTime kept, its
// modificationTime now), as Pulsar's update-metadata; ErrNotFound if there is none.
func (r *Resources) UpdatePackageMetadata(ctx context.Context, n PackageName, m PackageMetadata) error {
	if err := n.Check(); err != nil {
		return err
	}
	return update(ctx, r, packageKey(n), func(rec *PackageRecord) error {
		m.CreateTime = rec.Metadata.CreateTime
		m.ModificationTime = time.Now().UnixMilli()
		rec.Metadata = m
		return nil
	})
}

// DeletePackage removes a package version's record and returns it (its ledgers are the
// caller's to delete); ErrNotFound if there is none.
func (r *Resources) DeletePackage(ctx context.Context, n PackageName) (PackageRecord, error) {
	rec, err := r.Package(ctx, n)
	if err != nil {
		return rec, err
	}
	return rec, r.del(ctx, packageKey(n))
}

// Packages lists the names of a namespace's packages of one type (an empty list for none).
func (r *Resources) Packages(ctx context.Context, typ, tenant, ns string) ([]string, error) {
	n := PackageName{Type: typ, Tenant: tenant, Namespace: ns, Name: "x", Version: "x"}
	if err := n.Check(); err != nil {
		return nil, err
	}
	return r.unescapedChildren(ctx, packageDir(n.Type, tenant, ns))
}

// PackageVersions lists a package's versions (an empty list for none).
func (r *Resources) PackageVersions(ctx context.Context, n PackageName) ([]string, error) {
	if err := n.Check(); err != nil {
		return nil, err
	}
	return r.unescapedChildren(ctx, packageDir(n.Type, n.Tenant, n.Namespace)+url.PathEscape(n.Name)+"/")
}

func (r *Resources) unescapedChildren(ctx context.Context, prefix string) ([]string, error) {
	names, err := r.children(ctx, prefix)
	if err != nil {
		return nil, err
	}
	for i, s := range names {
		if u, err := url.PathUnescape(s); err == nil {
			names[i] = u
		}
	}
	return names, nil
}

// IsPackageURL reports whether s names a package of the packages API (function://,
// source:// or sink://) rather than a file or web URL.
func IsPackageURL(s string) bool {
	typ, _, ok := strings.Cut(s, "://")
	if !ok {
		return false
	}
	for _, pt := range packageTypes {
		if strings.EqualFold(pt, typ) {
			return true
		}
	}
	return false
}
