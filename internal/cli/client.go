package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/spf13/cobra"
)

// clientOptions are the flags every `magnetar client` verb shares (pulsar-client's global flags).
type clientOptions struct {
	url     string
	timeout time.Duration
	// urlSet says --url was given; without it brokerServiceUrl of --config (client.conf) counts.
	urlSet func() bool
	app    *app
	sec    clientSecurity // --auth-plugin, --auth-params, TLS flags (clientconf.go)
}

// clientCmd is `magnetar client produce|consume|read`, pulsar-client's verbs and flags,
// speaking the binary protocol through the official Go client.
func (a *app) clientCmd() *cobra.Command {
	opts := &clientOptions{app: a}
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Produce and consume messages from the command line (pulsar-client style)",
	}
	cmd.PersistentFlags().StringVar(&opts.url, "url", "pulsar://localhost:6650", "service URL of the broker")
	urlFlag := cmd.PersistentFlags().Lookup("url")
	opts.urlSet = func() bool { return urlFlag.Changed }
	cmd.PersistentFlags().DurationVar(&opts.timeout, "operation-timeout", 30*time.Second, "timeout of each client operation")
	opts.sec.bind(cmd.PersistentFlags())
	cmd.AddCommand(a.produceCmd(opts), a.consumeCmd(opts), a.readCmd(opts))
	return cmd
}

func (o *clientOptions) connect() (pulsar.Client, error) {
	cc, err := o.app.clientConfig()
	if err != nil {
		return nil, err
	}
	url := o.url
	if !o.urlSet() {
		url = cc.BrokerServiceURL
	}
	o.sec.load(cc)
	opts := pulsar.ClientOptions{
		URL:               url,
		OperationTimeout:  o.timeout,
		ConnectionTimeout: o.timeout,
		Logger:            plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if err := o.sec.pulsarOptions(&opts); err != nil {
		return nil, err
	}
	c, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, usageError(fmt.Errorf("client: %w", err))
	}
	return c, nil
}

func (a *app) produceCmd(o *clientOptions) *cobra.Command {
	var (
		messages   []string
		files      []string
		stdin      bool
		count      int
		rate       float64
		key        string
		props      []string
		noBatching bool
		chunking   bool
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Send messages to a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(messages) == 0 && len(files) == 0 && !stdin {
				return usageError(errors.New("client produce: give messages with -m, files with -f, or --stdin"))
			}
			properties, err := parseProperties(props)
			if err != nil {
				return usageError(err)
			}
			var payloads [][]byte
			for _, m := range messages {
				payloads = append(payloads, []byte(m))
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					return usageError(fmt.Errorf("client produce: %w", err))
				}
				payloads = append(payloads, b)
			}
			if stdin {
				sc := bufio.NewScanner(cmd.InOrStdin())
				sc.Buffer(make([]byte, 64*1024), 5<<20)
				for sc.Scan() {
					payloads = append(payloads, append([]byte(nil), sc.Bytes()...))
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("client produce: reading stdin: %w", err)
				}
			}
			c, err := o.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.CreateProducer(pulsar.ProducerOptions{
				Topic:           args[0],
				DisableBatching: noBatching || chunking,
				EnableChunking:  chunking,
			})
			if err != nil {
				return fmt.Errorf("client produce: creating producer on %s: %w", args[0], err)
			}
			defer p.Close()
			var tick <-chan time.Time
			if rate > 0 {
				t := time.NewTicker(time.Duration(float64(time.Second) / rate))
				defer t.Stop()
				tick = t.C
			}
			sent := 0
			for i := 0; i < count; i++ {
				for _, pl := range payloads {
					if tick != nil {
						select {
						case <-tick:
						case <-cmd.Context().Done():
							return cmd.Context().Err()
						}
					}
					if _, err := p.Send(cmd.Context(), &pulsar.ProducerMessage{Payload: pl, Key: key, Properties: properties}); err != nil {
						return fmt.Errorf("client produce: after %d messages: %w", sent, err)
					}
					sent++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d messages successfully produced\n", sent)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&messages, "messages", "m", nil, "message to send (repeatable)")
	f.StringArrayVarP(&files, "files", "f", nil, "file whose content is one message (repeatable)")
	f.BoolVar(&stdin, "stdin", false, "send each line of standard input as a message")
	f.IntVarP(&count, "num-produce", "n", 1, "how many times to send the given messages")
	f.Float64VarP(&rate, "rate", "r", 0, "messages per second (0: as fast as possible)")
	f.StringVarP(&key, "key", "k", "", "message key")
	f.StringArrayVarP(&props, "properties", "p", nil, "message property key=value (repeatable)")
	f.BoolVar(&noBatching, "disable-batching", false, "send every message in its own frame")
	f.BoolVarP(&chunking, "chunking", "c", false, "split messages larger than the broker's limit into chunks")
	return cmd
}

func parseProperties(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("property %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

var subscriptionTypes = map[string]pulsar.SubscriptionType{
	"Exclusive": pulsar.Exclusive, "Shared": pulsar.Shared, "Failover": pulsar.Failover, "Key_Shared": pulsar.KeyShared,
}

func (a *app) consumeCmd(o *clientOptions) *cobra.Command {
	var (
		sub, subType, position string
		count                  int
		hexOut                 bool
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Receive and acknowledge messages from a subscription",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, ok := subscriptionTypes[subType]
			if !ok {
				return usageError(fmt.Errorf("client consume: subscription type %q: want Exclusive, Shared, Failover or Key_Shared", subType))
			}
			var pos pulsar.SubscriptionInitialPosition
			switch position {
			case "Latest":
				pos = pulsar.SubscriptionPositionLatest
			case "Earliest":
				pos = pulsar.SubscriptionPositionEarliest
			default:
				return usageError(fmt.Errorf("client consume: position %q: want Latest or Earliest", position))
			}
			if sub == "" {
				return usageError(errors.New("client consume: --subscription-name (-s) is required"))
			}
			c, err := o.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: args[0], SubscriptionName: sub, Type: st, SubscriptionInitialPosition: pos})
			if err != nil {
				return fmt.Errorf("client consume: subscribing to %s: %w", args[0], err)
			}
			defer cons.Close()
			if position == "Latest" {
				fmt.Fprintln(cmd.ErrOrStderr(), "hint: a new subscription starts at Latest and sees only messages sent from now on; use -p Earliest to read what is already stored")
			}
			for n := 0; count == 0 || n < count; n++ {
				msg, err := cons.Receive(cmd.Context())
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil
					}
					return fmt.Errorf("client consume: %w", err)
				}
				printMessage(cmd.OutOrStdout(), msg, hexOut)
				if err := cons.Ack(msg); err != nil {
					return fmt.Errorf("client consume: ack: %w", err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&sub, "subscription-name", "s", "", "subscription name")
	f.StringVarP(&subType, "subscription-type", "t", "Exclusive", "Exclusive, Shared, Failover or Key_Shared")
	f.StringVarP(&position, "subscription-position", "p", "Latest", "where a new subscription starts: Latest or Earliest")
	f.IntVarP(&count, "num-messages", "n", 1, "messages to receive (0: forever)")
	f.BoolVar(&hexOut, "hex", false, "print payloads as hex")
	return cmd
}

func (a *app) readCmd(o *clientOptions) *cobra.Command {
	var (
		start  string
		count  int
		hexOut bool
	)
	cmd := &cobra.Command{
		Use:   "read TOPIC",
		Short: "Read messages with a reader (no subscription state)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var startID pulsar.MessageID
			switch start {
			case "earliest":
				startID = pulsar.EarliestMessageID()
			case "latest":
				startID = pulsar.LatestMessageID()
			default:
				return usageError(fmt.Errorf("client read: start %q: want earliest or latest", start))
			}
			c, err := o.connect()
			if err != nil {
				return err
			}
			defer c.Close()
			r, err := c.CreateReader(pulsar.ReaderOptions{Topic: args[0], StartMessageID: startID})
			if err != nil {
				return fmt.Errorf("client read: %w", err)
			}
			defer r.Close()
			for n := 0; count == 0 || n < count; n++ {
				msg, err := r.Next(cmd.Context())
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil
					}
					return fmt.Errorf("client read: %w", err)
				}
				printMessage(cmd.OutOrStdout(), msg, hexOut)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&start, "start-message-id", "m", "earliest", "earliest or latest")
	f.IntVarP(&count, "num-messages", "n", 1, "messages to read (0: forever)")
	f.BoolVar(&hexOut, "hex", false, "print payloads as hex")
	return cmd
}

// printMessage writes pulsar-client's "----- got message -----" block.
func printMessage(w io.Writer, m pulsar.Message, hexOut bool) {
	fmt.Fprintln(w, "----- got message -----")
	if k := m.Key(); k != "" {
		fmt.Fprintf(w, "key:[%s], ", k)
	}
	if p := m.Properties(); len(p) > 0 {
		fmt.Fprintf(w, "properties:%v, ", p)
	}
	if hexOut {
		fmt.Fprintf(w, "content:%x\n", m.Payload())
		return
	}
	fmt.Fprintf(w, "content:%s\n", m.Payload())
}
