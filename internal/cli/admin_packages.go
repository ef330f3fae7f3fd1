package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// packagesCmd is `magnetar admin packages ...`, after pulsar-admin packages: upload,
// download, delete, get-metadata, update-metadata, list and list-versions of function,
// source and sink packages (/admin/v3/packages). Uploads and downloads stream: a package is
// never held in memory.
func (ac *adminCLI) packagesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "packages", Short: "Manage packages (pulsar-admin packages)"}
	const base = "/admin/v3/packages/"
	pkgPath := func(s string, withVersion bool) (resources.PackageName, string, error) {
		n, err := resources.ParsePackageName(s)
		if err != nil {
			return n, "", usageError(fmt.Errorf("%s: it should be in the format of type://tenant/namespace/name@version", strings.TrimPrefix(err.Error(), resources.ErrInvalid.Error()+": ")))
		}
		p := base + url.PathEscape(n.Type) + "/" + url.PathEscape(n.Tenant) + "/" + url.PathEscape(n.Namespace) + "/" + url.PathEscape(n.Name)
		if withVersion {
			p += "/" + url.PathEscape(n.Version)
		}
		return n, p, nil
	}
	var description, contact, path, typ string
	var props map[string]string
	metaFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&description, "description", "", "descriptions of a package (required)")
		c.Flags().StringVar(&contact, "contact", "", "contact information of a package")
		c.Flags().StringToStringVarP(&props, "properties", "P", nil, "external information of a package (key=value)")
		_ = c.MarkFlagRequired("description")
	}
	metadata := func() resources.PackageMetadata {
		return resources.PackageMetadata{Description: description, Contact: contact, Properties: props}
	}
	say := func(cmd *cobra.Command, format string, a ...any) error {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), format+"\n", a...)
		return err
	}

	getMeta := ac.verb("get-metadata", "Get a package metadata information", 1, func(ctx context.Context, args []string) ([]byte, error) {
		_, p, err := pkgPath(args[0], true)
		if err != nil {
			return nil, err
		}
		return ac.get(ctx, p+"/metadata")
	})
	updateMeta := &cobra.Command{Use: "update-metadata type://tenant/namespace/name@version", Short: "Update a package metadata information",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := pkgPath(args[0], true)
			if err != nil {
				return err
			}
			if _, err := ac.send(cmd.Context(), http.MethodPut, p+"/metadata", metadata()); err != nil {
				return err
			}
			return say(cmd, "The metadata of the package '%s' updated successfully", args[0])
		}}
	metaFlags(updateMeta)
	upload := &cobra.Command{Use: "upload type://tenant/namespace/name@version", Short: "Upload a package",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := pkgPath(args[0], true)
			if err != nil {
				return err
			}
			if _, err := ac.multipart(cmd.Context(), http.MethodPost, p, nil, map[string]any{"metadata": metadata()}, path, "file"); err != nil {
				return err
			}
			return say(cmd, "The package '%s' uploaded from path '%s' successfully", args[0], path)
		}}
	metaFlags(upload)
	upload.Flags().StringVar(&path, "path", "", "the file to upload (required)")
	_ = upload.MarkFlagRequired("path")
	download := &cobra.Command{Use: "download type://tenant/namespace/name@version", Short: "Download a package",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := pkgPath(args[0], true)
			if err != nil {
				return err
			}
			if err := ac.download(cmd.Context(), p, path); err != nil {
				return err
			}
			return say(cmd, "The package '%s' downloaded to path '%s' successfully", args[0], path)
		}}
	download.Flags().StringVar(&path, "path", "", "download destination path of the package (required)")
	_ = download.MarkFlagRequired("path")
	list := &cobra.Command{Use: "list --type TYPE tenant/namespace", Short: "List all packages with given type in the specified namespace",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := nsPath(args[0])
			if err != nil {
				return err
			}
			b, err := ac.get(cmd.Context(), base+url.PathEscape(typ)+"/"+ns)
			if err != nil {
				return err
			}
			return ac.show(cmd, b)
		}}
	list.Flags().StringVar(&typ, "type", "", "type of the package: function, source or sink (required)")
	_ = list.MarkFlagRequired("type")
	versions := ac.verb("list-versions", "List all versions of the given package (type://tenant/namespace/name)", 1, func(ctx context.Context, args []string) ([]byte, error) {
		_, p, err := pkgPath(args[0], false)
		if err != nil {
			return nil, err
		}
		return ac.get(ctx, p)
	})
	del := &cobra.Command{Use: "delete type://tenant/namespace/name@version", Short: "Delete a package",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := pkgPath(args[0], true)
			if err != nil {
				return err
			}
			if _, err := ac.send(cmd.Context(), http.MethodDelete, p, nil); err != nil {
				return err
			}
			return say(cmd, "The package '%s' deleted successfully", args[0])
		}}
	cmd.AddCommand(getMeta, updateMeta, upload, download, list, versions, del)
	return cmd
}

// stream does one REST request with body streamed as contentType and returns the open
// response of a success (the caller closes it); a failure is errREST with the reason. It
// allows max(--timeout, 5m): packages are large.
func (ac *adminCLI) stream(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, max(ac.timeout, 5*time.Minute))
	req, err := ac.newRequest(ctx, method, path, body)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := ac.do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

// download writes the package at path to the file dest (its directory made if needed),
// through a temporary file so a cut-off download leaves nothing named dest.
func (ac *adminCLI) download(ctx context.Context, path, dest string) error {
	resp, cancel, err := ac.stream(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	if dir := filepath.Dir(dest); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("downloading %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), dest)
}
