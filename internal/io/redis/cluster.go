package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Redis Cluster (clientMode Cluster): the key space is cut into 16384 hash slots, each
// served by one primary. The sink learns which node serves which slot from CLUSTER SLOTS
// on any of redisHosts, sends each record's SET or DEL to its slot's node (one pipeline per
// node per batch), and on MOVED (the slot has a new owner) reloads the map and sends the
// refused commands again; on ASK (a slot being migrated) it sends them to the named node
// once, after ASKING. A batch is not one MULTI/EXEC here (a transaction cannot span slots),
// but SET and DEL by key are idempotent and a key's commands stay in order on its node, so
// a batch retried whole leaves every key at its latest value, as in Standalone mode.

const numSlots = 16384

// maxRedirects bounds MOVED/ASK rounds within one write; past it the batch is retried
// with backoff (the cluster is resharding faster than we follow).
const maxRedirects = 5

// slotOf is key's hash slot: CRC16 (XMODEM) of the key, or of its hash tag (the part
// between the first '{' and the next '}', when not empty), modulo 16384.
func slotOf(key []byte) uint16 {
	if i := indexByte(key, '{'); i >= 0 {
		if j := indexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % numSlots
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), bit by bit: keys are short and
// this runs once per record, not per byte of payload.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, x := range b {
		crc ^= uint16(x) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slotMap is which node serves each slot: an index into addrs (-1: nobody).
type slotMap struct {
	addrs []string
	owner [numSlots]int16
}

// parseSlots reads a CLUSTER SLOTS reply: an array of [start, end, [host, port, ...],
// replicas...]. An empty host means the node we asked (Redis answers so for itself when
// it has no announced address); seed is that node's address.
func parseSlots(r reply, seed string) (*slotMap, error) {
	if r.Err != "" {
		return nil, fmt.Errorf("redis sink: CLUSTER SLOTS: %w", r.Err)
	}
	m := &slotMap{}
	for i := range m.owner {
		m.owner[i] = -1
	}
	index := map[string]int16{}
	seedHost, _, _ := net.SplitHostPort(seed)
	for _, e := range r.Array {
		if len(e.Array) < 3 || len(e.Array[2].Array) < 2 {
			return nil, fmt.Errorf("%w: CLUSTER SLOTS entry %+v", errProtocol, e)
		}
		lo, hi := e.Array[0].Int, e.Array[1].Int
		host, port := e.Array[2].Array[0].Str, e.Array[2].Array[1].Int
		if lo < 0 || hi >= numSlots || lo > hi || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("%w: CLUSTER SLOTS range %d-%d on port %d", errProtocol, lo, hi, port)
		}
		if host == "" || host == "?" {
			host = seedHost
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		idx, ok := index[addr]
		if !ok {
			if len(m.addrs) >= numSlots {
				return nil, fmt.Errorf("%w: CLUSTER SLOTS names too many nodes", errProtocol)
			}
			idx = int16(len(m.addrs))
			index[addr] = idx
			m.addrs = append(m.addrs, addr)
		}
		for s := lo; s <= hi; s++ {
			m.owner[s] = idx
		}
	}
	return m, nil
}

// cluster is the sink's view of a Redis Cluster.
type cluster struct {
	seeds    []string
	template node // password and timeouts for every node
	slots    *slotMap
	nodes    map[string]*node
}

func (c *cluster) node(addr string) *node {
	n := c.nodes[addr]
	if n == nil {
		n = &node{addr: addr, password: c.template.password, connectTO: c.template.connectTO, opTO: c.template.opTO}
		c.nodes[addr] = n
	}
	return n
}

// refresh reloads the slot map from the first seed or known node that answers.
func (c *cluster) refresh(ctx context.Context) error {
	tried := append([]string(nil), c.seeds...)
	if c.slots != nil {
		tried = append(tried, c.slots.addrs...)
	}
	var errs []error
	for _, addr := range tried {
		n := c.node(addr)
		if err := n.ensure(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		rs, err := n.roundTrip(appendCommand(nil, []byte("CLUSTER"), []byte("SLOTS")), 1)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m, err := parseSlots(rs[0], addr)
		if err != nil {
			if rs[0].Err != "" && strings.Contains(string(rs[0].Err), "cluster support disabled") {
				return connector.Permanent(fmt.Errorf("redis sink: clientMode Cluster, but %s is not a cluster node: %w", addr, rs[0].Err))
			}
			errs = append(errs, err)
			continue
		}
		c.slots = m
		return nil
	}
	return fmt.Errorf("redis sink: no cluster node answered CLUSTER SLOTS: %w", errors.Join(errs...))
}

// write sends recs' commands to their slots' nodes, following MOVED and ASK.
func (c *cluster) write(ctx context.Context, recs []*connector.Record) error {
	if c.slots == nil {
		if err := c.refresh(ctx); err != nil {
			return err
		}
	}
	pending := recs
	ask := map[*connector.Record]string{} // record -> node named by ASK
	for round := 0; len(pending) > 0; round++ {
		if round > maxRedirects {
			return fmt.Errorf("redis sink: still redirected after %d rounds; retrying the batch", maxRedirects)
		}
		byNode := map[string][]*connector.Record{}
		for _, r := range pending {
			addr, ok := ask[r]
			if !ok {
				o := c.slots.owner[slotOf([]byte(r.Key))]
				if o < 0 {
					return fmt.Errorf("redis sink: slot %d of key %q is not served (cluster down?)", slotOf([]byte(r.Key)), r.Key)
				}
				addr = c.slots.addrs[o]
			}
			byNode[addr] = append(byNode[addr], r)
		}
		var again []*connector.Record
		nextAsk := map[*connector.Record]string{}
		moved := false
		for addr, rs := range byNode {
			redirected, asked, err := c.send(ctx, c.node(addr), rs, ask)
			if err != nil {
				return err
			}
			again = append(again, redirected...)
			for r, to := range asked {
				nextAsk[r] = to
			}
			moved = moved || len(redirected) > len(asked)
		}
		if moved {
			if err := c.refresh(ctx); err != nil {
				return err
			}
		}
		pending, ask = again, nextAsk
	}
	return nil
}

// send pipelines rs' commands to n (each after ASKING when ask names n for it) and returns
// the records redirected elsewhere, with those redirected by ASK and their targets.
func (c *cluster) send(ctx context.Context, n *node, rs []*connector.Record, ask map[*connector.Record]string) ([]*connector.Record, map[*connector.Record]string, error) {
	if err := n.ensure(ctx); err != nil {
		return nil, nil, err
	}
	var buf []byte
	count := 0
	for _, r := range rs {
		if _, ok := ask[r]; ok {
			buf = appendCommand(buf, []byte("ASKING"))
			count++
		}
		buf = appendRecord(buf, r)
		count++
	}
	replies, err := n.roundTrip(buf, count)
	if err != nil {
		return nil, nil, err
	}
	var redirected []*connector.Record
	asked := map[*connector.Record]string{}
	i := 0
	for _, r := range rs {
		if _, ok := ask[r]; ok {
			i++ // ASKING's +OK
		}
		e := string(replies[i].Err)
		i++
		switch {
		case e == "":
		case strings.HasPrefix(e, "MOVED "):
			redirected = append(redirected, r)
		case strings.HasPrefix(e, "ASK "):
			f := strings.Fields(e)
			if len(f) != 3 {
				return nil, nil, fmt.Errorf("%w: %q", errProtocol, e)
			}
			redirected = append(redirected, r)
			asked[r] = f[2]
		case strings.HasPrefix(e, "TRYAGAIN"), strings.HasPrefix(e, "CLUSTERDOWN"), strings.HasPrefix(e, "LOADING"):
			return nil, nil, fmt.Errorf("redis sink: %s: %w", n.addr, replies[i-1].Err) // transient: the batch is retried
		default:
			return nil, nil, connector.Permanent(fmt.Errorf("redis sink: %s: %w", n.addr, replies[i-1].Err))
		}
	}
	return redirected, asked, nil
}

func (c *cluster) close() {
	for _, n := range c.nodes {
		n.drop()
	}
}
