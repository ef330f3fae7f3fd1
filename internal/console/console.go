package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// Prefix is where the console is served.
const Prefix = "/ui"

// Options are the console's settings.
type Options struct {
	// ReadOnly draws no button that changes anything (consoleReadOnly).
	ReadOnly bool
}

// Mount serves the console under /ui and passes every other request to next.
func Mount(next http.Handler, o Options) http.Handler {
	assets, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("console: embedded dist missing: " + err.Error()) // a build without the assets
	}
	files := http.FileServerFS(assets)
	cfg, _ := json.Marshal(map[string]any{"readOnly": o.ReadOnly})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p != Prefix && !strings.HasPrefix(p, Prefix+"/") {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the console is read through GET", http.StatusMethodNotAllowed)
			return
		}
		rel := strings.TrimPrefix(p, Prefix)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		switch {
		case rel == "":
			http.Redirect(w, r, Prefix+"/", http.StatusMovedPermanently)
		case rel == "/config.json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(cfg)
		case strings.HasPrefix(rel, "/assets/"):
			// Named by content hash: cacheable for good.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			r2 := r.Clone(r.Context())
			r2.URL.Path = path.Clean(rel)
			files.ServeHTTP(w, r2)
		default:
			// Every other path is the single page (its router reads the fragment).
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
			http.ServeFileFS(w, r, assets, "index.html")
		}
	})
}
