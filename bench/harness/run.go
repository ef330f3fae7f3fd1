package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Block is one measured run of one system on one workload variant.
type Block struct {
	Spec     string
	System   string
	Pair     int
	Seq      int     // global order in the run
	Rate     float64 // target msg/s (0 = max)
	ReadyMs  float64
	MsgPerS  float64 // acknowledged publishes per second in the window
	MBPerS   float64
	ConsPerS float64
	// Latencies in microseconds.
	PubP50, PubP99, PubP999, PubMax float64
	E2EP50, E2EP99, E2EP999         float64
	ServerCPUPerM                   float64 // server CPU seconds per million acked messages
	ClientCPUPerM                   float64 // load generator (this process) CPU s per million
	ServerHWMBytes                  int64   // VmHWM of the server at the end of the block
	IdleRSSBytes                    int64   // VmRSS right after ready, before any load
	SetupSeconds                    float64 // creating stream/topics, consumers and producers
	CatchupMsgPerS, CatchupMBPerS   float64
	Load1, PSICPU                   string
	Errors                          int64
	LastError, Note, Failed         string
	Profile                         string // Magnetar CPU profile summary (first pair, -magnetar-pprof)
}

// Results is the whole run, also written as JSON.
type Results struct {
	Config  Config
	Env     Env
	Command string
	Specs   []Spec
	Blocks  []Block
	Skipped map[string]string // spec -> reason
}

// Run executes the configured comparison and writes the report, plot and JSON.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Results, error) {
	repo, err := filepath.Abs(cfg.RepoDir)
	if err != nil {
		return nil, err
	}
	work := cfg.WorkDir
	if work == "" {
		work = filepath.Join(repo, "bench", "results") // ignored by the root .gitignore
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	res := &Results{Config: cfg, Env: probeEnv(repo), Command: cfg.Command, Skipped: map[string]string{}}
	res.Env.NoFile = raiseNoFile(scaleNoFile)
	if p50, p99, err := fsyncProbe(work, 500); err == nil {
		res.Env.FsyncP50, res.Env.FsyncP99 = p50.String(), p99.String()
	}
	// Hashes of the config shape (port and directory normalised), comparable across runs.
	res.Env.NATSConfD1 = ConfigHash(NATSConfig(0, "js", D1))
	res.Env.NATSConfD2 = ConfigHash(NATSConfig(0, "js", D2))

	mag := &magnetarSystem{bin: absPath(repo, cfg.MagnetarBin), baseArgs: cfg.MagnetarBaseArgs, extra: cfg.MagnetarArgs, serviceURL: cfg.MagnetarURL,
		httpURL: cfg.MagnetarHTTP, noSync: cfg.MagnetarNoSyncFlag, window: cfg.Window, gomaxprocs: cfg.GoMaxProcs}
	r := &runner{cfg: cfg, log: log, work: work, res: res}
	if cfg.MagnetarPprof != "" {
		mag.extra = withPprofFlag(mag.extra)
		r.prof = &profiler{baseURL: cfg.MagnetarPprof, dir: filepath.Join(work, "profiles"), bin: mag.bin}
	}
	magOK := r.probeMagnetar(ctx, mag)
	log.Info("magnetar", "status", res.Env.Magnetar)
	peers, err := r.peerSystems(ctx, repo, mag)
	if err != nil {
		return nil, err
	}
	var all []System
	if magOK {
		all = append(all, mag)
		if cfg.Peer == "kafka" {
			pulsarSide := *mag
			pulsarSide.name = "magnetar-pulsar"
			all = []System{&magnetarKafkaSystem{m: mag}, &pulsarSide}
		}
	}
	all = append(all, peers...)

	res.Specs = Expand(cfg)
	for _, spec := range res.Specs {
		if ctx.Err() != nil {
			break
		}
		if spec.RateHalf {
			peak := r.median(spec.RateOf, spec.Versus, func(b Block) float64 { return b.MsgPerS })
			if peak <= 0 {
				res.Skipped[spec.Name] = "needs " + spec.RateOf + " " + spec.Versus + " max rate from this run"
				continue
			}
			spec.Rate = peak / 2
			for i := range res.Specs { // the report states the rate the variant ran at
				if res.Specs[i].Name == spec.Name {
					res.Specs[i].Rate = spec.Rate
				}
			}
		}
		systems := systemsFor(spec, all, cfg)
		for pair := 0; pair < cfg.Pairs; pair++ {
			order := slices.Clone(systems)
			if pair%2 == 1 {
				slices.Reverse(order)
			}
			for _, sys := range order {
				b := r.runBlock(ctx, spec, sys, pair)
				log.Info("block", "spec", spec.Name, "system", b.System, "pair", pair, "msg/s", int(b.MsgPerS),
					"pub_p99_us", int(b.PubP99), "e2e_p99_us", int(b.E2EP99), "catchup_msg/s", int(b.CatchupMsgPerS),
					"rss_mib", b.ServerHWMBytes>>20, "errors", b.Errors, "failed", b.Failed)
				res.Blocks = append(res.Blocks, b)
			}
		}
	}
	if err := r.write(repo); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

type runner struct {
	cfg  Config
	log  *slog.Logger
	work string
	res  *Results
	seq  int
	prof *profiler
}

// probeMagnetar starts the standalone once; any failure makes the run NATS-only with the
// reason in the report.
func (r *runner) probeMagnetar(ctx context.Context, m *magnetarSystem) bool {
	if _, err := os.Stat(m.bin); err != nil {
		r.res.Env.Magnetar = fmt.Sprintf("not available (%s missing; run `make build`)", m.bin)
		return false
	}
	dir := filepath.Join(r.work, "probe-magnetar")
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.res.Env.Magnetar = "not available (" + err.Error() + ")"
		return false
	}
	defer os.RemoveAll(dir)
	pctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	inst, err := m.Start(pctx, D1, dir)
	if err != nil {
		r.res.Env.Magnetar = "not available (" + err.Error() + ")"
		return false
	}
	inst.Stop()
	ver := "version unknown"
	if out, err := exec.Command(m.bin, "version").Output(); err == nil {
		ver = strings.TrimSpace(string(out))
	}
	r.res.Env.Magnetar = fmt.Sprintf("available (%s: %s; ready in %s at probe; args %s)", m.bin, ver,
		inst.Ready.Round(time.Millisecond), strings.Join(m.Args(D1, "<dir>", nil), " "))
	return true
}

func (r *runner) runBlock(ctx context.Context, spec Spec, sys System, pair int) (b Block) {
	r.seq++
	b = Block{Spec: spec.Name, System: sys.Name(), Pair: pair, Seq: r.seq, Rate: spec.Rate}
	b.Load1, b.PSICPU = loadNow()
	dir := filepath.Join(r.work, fmt.Sprintf("%03d-%s", r.seq, sys.Name()))
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Failed = err.Error()
		return b
	}
	defer os.RemoveAll(dir) // backlogs can be GiBs; logs of failed blocks are quoted in Failed
	readyTimeout := r.cfg.ReadyTimeout
	if jvmSystem(sys.Name()) {
		spec.Warmup = max(spec.Warmup, r.cfg.JVMWarmup)
		readyTimeout = r.cfg.JVMReadyTimeout
	}
	budget := readyTimeout + spec.Warmup + spec.Measure + 3*time.Minute
	switch {
	case spec.BacklogBytes > 0:
		budget = 20 * time.Minute
	case spec.Sweep != "":
		budget += 30 * time.Minute // thousands of topics or connections to set up first
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	sctx, scancel := context.WithTimeout(bctx, readyTimeout)
	inst, err := sys.Start(sctx, spec.Durability, dir)
	scancel()
	if err != nil {
		b.Failed = err.Error()
		return b
	}
	defer inst.Stop()
	b.ReadyMs = float64(inst.Ready.Microseconds()) / 1000
	if st, err := readProc(inst.srv.pid()); err == nil {
		b.IdleRSSBytes = st.RSSBytes
	}
	var s0, s1 ProcStat
	var c0, c1 float64
	var t0, t1 time.Time
	wait := func() string { return "" }
	profile := r.prof != nil && sys.Name() == "magnetar" && pair == 0 && spec.BacklogBytes == 0
	h := hooks{
		onStart: func() {
			s0, _ = readProc(inst.srv.pid())
			c0 = selfCPU()
			t0 = time.Now()
			if profile {
				wait = r.prof.start(bctx, inst, fmt.Sprintf("%s-%s", spec.Name, sys.Name()), spec.Measure)
			}
		},
		onEnd: func() { s1, _ = readProc(inst.srv.pid()); c1 = selfCPU(); t1 = time.Now() },
	}
	g := newLoadGen(spec, inst.Drv, fmt.Sprintf("b%03d", r.seq), r.cfg.Window, spec.Rate)
	lr, err := g.Run(bctx, h, func() string { return dropCaches(r.cfg.DropCaches) })
	b.Profile = wait()
	if err != nil {
		b.Failed = err.Error()
		if inst.srv.exited() {
			b.Failed += " (server exited: " + inst.srv.tail() + ")"
		}
		return b
	}
	if end, err := readProc(inst.srv.pid()); err == nil {
		b.ServerHWMBytes = end.HWMBytes
	}
	secs := t1.Sub(t0).Seconds()
	if secs <= 0 {
		b.Failed = "empty measurement window"
		return b
	}
	b.MsgPerS = float64(lr.PubCount) / secs
	b.MBPerS = float64(lr.PubBytes) / secs / 1e6
	b.ConsPerS = float64(lr.ConsCount) / secs
	if lr.PubHist.TotalCount() > 0 {
		b.PubP50, b.PubP99, b.PubP999 = q(lr.PubHist.ValueAtQuantile(50)), q(lr.PubHist.ValueAtQuantile(99)), q(lr.PubHist.ValueAtQuantile(99.9))
		b.PubMax = q(lr.PubHist.Max())
	}
	// In catch-up blocks e2e would measure the age of the backlog, not the system: omit it.
	if lr.E2EHist.TotalCount() > 0 && spec.BacklogBytes == 0 {
		b.E2EP50, b.E2EP99, b.E2EP999 = q(lr.E2EHist.ValueAtQuantile(50)), q(lr.E2EHist.ValueAtQuantile(99)), q(lr.E2EHist.ValueAtQuantile(99.9))
	}
	msgs := float64(lr.PubCount)
	if spec.BacklogBytes > 0 {
		msgs = float64(lr.CatchupMsgs) + float64(lr.PubCount)
		if lr.CatchupSeconds > 0 {
			b.CatchupMsgPerS = float64(lr.CatchupMsgs) / lr.CatchupSeconds
			b.CatchupMBPerS = b.CatchupMsgPerS * float64(spec.MsgSize) / 1e6
		}
	}
	if msgs > 0 {
		b.ServerCPUPerM = (s1.CPUSeconds - s0.CPUSeconds) / msgs * 1e6
		b.ClientCPUPerM = (c1 - c0) / msgs * 1e6
		b.Profile = profileCPUPerM(b.Profile, msgs/secs, b.ServerCPUPerM)
	}
	b.Errors, b.LastError, b.Note = lr.Errors, lr.LastError, lr.Note
	b.SetupSeconds = lr.SetupSeconds
	if lr.SetupSeconds >= 2 {
		b.Note = strings.TrimPrefix(fmt.Sprintf("%s; setup (topics, consumers, producers) took %.1f s", b.Note, lr.SetupSeconds), "; ")
	}
	if lr.PubCount == 0 {
		b.Note = strings.TrimPrefix(b.Note+"; no publish acknowledged inside the window (stall longer than the window?)", "; ")
	}
	return b
}

func q(v int64) float64 { return float64(v) }

// median of f over the successful blocks of one spec and system; 0 when none.
func (r *runner) median(spec, system string, f func(Block) float64) float64 {
	return medianOf(blocksOf(r.res.Blocks, spec, system), f)
}

func blocksOf(all []Block, spec, system string) []Block {
	var out []Block
	for _, b := range all {
		if b.Spec == spec && b.System == system && b.Failed == "" {
			out = append(out, b)
		}
	}
	return out
}

func medianOf(bs []Block, f func(Block) float64) float64 {
	if len(bs) == 0 {
		return 0
	}
	v := make([]float64, len(bs))
	for i, b := range bs {
		v[i] = f(b)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func (r *runner) write(repo string) error {
	jsonPath := r.cfg.OutJSON
	if jsonPath == "" {
		jsonPath = filepath.Join(r.work, "results.json")
	}
	js, err := json.MarshalIndent(r.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(absPath(repo, jsonPath), js, 0o644); err != nil {
		return err
	}
	return Render(r.res, absPath(repo, r.cfg.OutMD), absPath(repo, r.cfg.OutPNG))
}

// Render writes the markdown report and the plot of a finished run.
func Render(res *Results, mdPath, pngPath string) error {
	var errs []error
	errs = append(errs, os.WriteFile(mdPath, []byte(Markdown(res, res.Config)), 0o644))
	if err := Plot(res, pngPath); err != nil {
		errs = append(errs, fmt.Errorf("plot: %w", err))
	}
	if err := PlotScaling(res, pngPath); err != nil {
		errs = append(errs, fmt.Errorf("scaling plots: %w", err))
	}
	return errors.Join(errs...)
}

// Load reads a results.json written by Run, to re-render it.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return &res, nil
}

// magnetarBefore names the other build of an A/B run (-peer magnetar).
const magnetarBefore = "magnetar-before"

// peerSystem is the system the ratios and the half-rate workloads of a single-peer run
// refer to.
func peerSystem(cfg Config) string {
	if hp := cfg.halfPeers(); len(hp) > 0 {
		return hp[0]
	}
	return cfg.Peer
}

// peerSystems prepares every peer of the run (installing nats-server, building the JVM
// helpers and fetching their jars). A peer that cannot be prepared is left out with its
// reason in Env.Peers; the run goes on with the others.
func (r *runner) peerSystems(ctx context.Context, repo string, mag *magnetarSystem) ([]System, error) {
	cfg, res := r.cfg, r.res
	res.Env.Peers = map[string]string{}
	var out []System
	switch cfg.Peer {
	case "magnetar":
		b := *mag
		b.name, b.bin = magnetarBefore, absPath(repo, cfg.PeerBin)
		after := res.Env.Magnetar
		if !r.probeMagnetar(ctx, &b) {
			return nil, fmt.Errorf("%w: -peer-bin %s: %s", ErrConfig, b.bin, res.Env.Magnetar)
		}
		res.Env.Magnetar = after + "; magnetar-before: " + res.Env.Magnetar
		return []System{&b}, nil
	case "kafka":
		bin, version, err := EnsureKafkaServer(ctx, repo, cfg.CacheDir)
		if err != nil {
			return nil, err
		}
		res.Env.KafkaVersion = kafkaEnv(version, cfg.KafkaHeap)
		return []System{&kafkaSystem{bin: bin, window: cfg.Window, heap: cfg.KafkaHeap}}, nil
	}
	for _, p := range cfg.activePeers() {
		switch p {
		case "nats":
			bin, err := EnsureNATS(ctx, cfg.CacheDir, cfg.NATSVersion)
			if err != nil {
				res.Env.Peers[p] = "not available (" + err.Error() + ")"
				continue
			}
			res.Env.NATSVersion = "nats-server " + cfg.NATSVersion
			res.Env.Peers[p] = res.Env.NATSVersion
			out = append(out, &natsSystem{bin: bin, name: "nats", port: cfg.NATSPort, window: cfg.Window, gomaxprocs: cfg.GoMaxProcs})
			if cfg.AtomicBatch > 0 {
				out = append(out, &natsSystem{bin: bin, name: "nats-atomic", port: cfg.NATSPort, window: cfg.Window, atomic: cfg.AtomicBatch, gomaxprocs: cfg.GoMaxProcs})
			}
		case "kafka":
			bin, version, err := EnsureKafkaServer(ctx, repo, cfg.CacheDir)
			if err != nil {
				res.Env.Peers[p] = "not available (" + err.Error() + ")"
				continue
			}
			res.Env.KafkaVersion = kafkaEnv(version, cfg.KafkaHeap)
			res.Env.Peers[p] = res.Env.KafkaVersion
			out = append(out, &kafkaSystem{bin: bin, window: cfg.Window, heap: cfg.KafkaHeap})
		case "pulsar":
			bin, version, err := EnsurePulsarServer(ctx, repo, cfg.CacheDir)
			if err != nil {
				res.Env.Peers[p] = "not available (" + err.Error() + ")"
				continue
			}
			res.Env.PulsarVersion = pulsarEnv(version, cfg.PulsarHeap, cfg.PulsarDirectMemory)
			res.Env.Peers[p] = res.Env.PulsarVersion
			out = append(out, &pulsarSystem{bin: bin, heap: cfg.PulsarHeap, direct: cfg.PulsarDirectMemory, window: cfg.Window})
		}
		r.log.Info("peer", "system", p, "status", res.Env.Peers[p])
	}
	return out, nil
}

// systemsFor picks the systems of one variant: nats-atomic only where atomic batches are
// what is compared (D1, one partition, max rate), and only Magnetar and the peer of a
// half-rate variant.
func systemsFor(spec Spec, all []System, cfg Config) []System {
	var out []System
	for _, s := range all {
		name := s.Name()
		if name == "nats-atomic" && !(spec.Durability == D1 && spec.MaxRate() && spec.Partitions == 1) {
			continue
		}
		if spec.Versus != "" && cfg.Peer == "compare" && name != "magnetar" && name != spec.Versus {
			continue
		}
		out = append(out, s)
	}
	return out
}

// jvmSystem tells the JVM peers, whose blocks get -jvm-warmup and -jvm-ready-timeout.
func jvmSystem(name string) bool { return name == "kafka" || name == "pulsar" }
