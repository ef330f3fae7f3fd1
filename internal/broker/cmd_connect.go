package broker

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleConnect answers CONNECT with CONNECTED directly (the Go client's handshake reads
// exactly one frame and requires CONNECTED), after authenticating the client when
// authentication is on (auth.go): a refused client gets ERROR and the connection closes.
func (c *conn) handleConnect(cmd *pb.CommandConnect) error {
	if c.connected.Load() {
		return fmt.Errorf("%w: second CONNECT", errProtocol)
	}
	if err := c.authenticate(cmd); err != nil {
		c.sendAuthError(err)
		return fmt.Errorf("%w: %w", errAuthClosed, err)
	}
	c.clientVersion = cmd.GetClientVersion()
	c.protoVersion = min(cmd.GetProtocolVersion(), maxProtocolVersion)
	c.bemSupported = cmd.GetFeatureFlags().GetSupportsBrokerEntryMetadata()
	c.connected.Store(true)
	if se := c.sess.Load(); se != nil {
		go c.refreshLoop(se, c.protoVersion) // auth.go
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{
		ServerVersion:   proto.String(ServerVersion),
		ProtocolVersion: proto.Int32(c.protoVersion),
		MaxMessageSize:  proto.Int32(int32(c.s.cfg.MaxMessageSize)),
		FeatureFlags:    &pb.FeatureFlags{SupportsTopicWatchers: proto.Bool(false)},
	}})
	c.log.Debug("client connected", "client", c.clientVersion, "protocol_version", c.protoVersion)
	return nil
}
