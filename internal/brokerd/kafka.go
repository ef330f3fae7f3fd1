package brokerd

import (
	"fmt"
	"net"
	"strconv"

	"github.com/magnetar-io/magnetar/internal/broker"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/kafka"
	"github.com/magnetar-io/magnetar/internal/ownership"
)

// startKafka serves the Kafka protocol (kafkaListeners) on the topic service. Metadata
// advertises the first listener: its kafkaAdvertisedListeners entry of the same name when
// there is one (port 0 there means the bound port), else its bound address with the
// broker's advertised host when it binds every interface. In a cluster the address is
// registered with the broker (ownership.Manager.SetProtocol) so every broker lists it.
func (s *Services) startKafka(o ServicesOptions) error {
	kc := o.Broker.Kafka
	ls, err := config.ParseKafkaListeners("kafkaListeners", kc.Listeners)
	if err != nil {
		return err
	}
	adv, err := config.ParseKafkaListeners("kafkaAdvertisedListeners", kc.AdvertisedListeners)
	if err != nil {
		return err
	}
	var lns []net.Listener
	defer func() {
		if s.Kafka == nil {
			for _, ln := range lns {
				_ = ln.Close()
			}
		}
	}()
	for _, l := range ls {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return fmt.Errorf("kafka listen (kafkaListeners %s://%s): %w", l.Name, l.Addr(), err)
		}
		lns = append(lns, ln)
	}
	first := ls[0]
	host, port := first.Host, lns[0].Addr().(*net.TCPAddr).Port
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = broker.AdvertisedHost(o.Broker)
	}
	for _, a := range adv {
		if a.Name == first.Name {
			host = a.Host
			if a.Port != 0 {
				port = a.Port
			}
		}
	}
	advertised := net.JoinHostPort(host, strconv.Itoa(port))
	own, _ := o.Ownership.(*ownership.Manager)
	be, err := kafka.NewTopicsBackend(kafka.TopicsBackendOptions{
		Topics: s.Topics, Resources: o.Resources, Ownership: own, Advertised: advertised,
		Tenant: kc.Tenant, Namespace: kc.Namespace, OffsetMetadataMaxBytes: kc.OffsetMetadataMaxBytes,
		// Kafka transactions run on the coordinators Pulsar transactions use (nil when
		// transactionCoordinatorEnabled is off).
		Transactions: s.Broker.Coordinators(),
	})
	if err != nil {
		return err
	}
	srv, err := kafka.New(kafka.Options{
		Config: kc, Backend: be, NodeID: be.NodeID(), ClusterID: o.Broker.ClusterName,
		MaxMessageSize: o.Broker.MaxMessageSize, Logger: o.Logger, Registerer: o.Registry,
		// SASL (PLAIN with a token or basic password, OAUTHBEARER) against the broker's
		// authentication providers; every request authorized as on the Pulsar side.
		Auth: s.Security.Authn, Authorizer: s.Security.Authz,
		AuthzCacheTTL: o.Broker.Security.Authz.RecheckInterval(),
	})
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	for _, ln := range lns {
		srv.Serve(ln)
	}
	if own != nil {
		own.SetProtocol("kafka", first.Name+"://"+advertised)
	}
	s.Kafka, s.kafkaAddr = srv, advertised
	return nil
}

// KafkaAddr is the advertised Kafka listener address ("" when Kafka is off).
func (s *Services) KafkaAddr() string { return s.kafkaAddr }
