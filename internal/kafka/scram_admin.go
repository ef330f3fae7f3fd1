package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): superusers only,
// as Kafka allows them to the cluster's Describe/Alter ACL holders. An upsertion carries the
// salt and SaltedPassword the admin client computed (never the password); the broker keeps
// StoredKey and ServerKey derived from it (scram.go). Per-user errors are Kafka's: an
// unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 or an empty
// name UNACCEPTABLE_CREDENTIAL, a user and mechanism named twice DUPLICATE_RESOURCE,
// deleting or describing what does not exist RESOURCE_NOT_FOUND.

// superUser checks that the connection's principal may manage credentials.
func (c *conn) superUser(action string) error {
	if err := c.s.authz.SuperUser(c.principal, action, "the Kafka cluster"); err != nil {
		return fmt.Errorf("%w: %v", ErrClusterAuthorization, err)
	}
	return nil
}

func handleDescribeUserSCRAMCredentials(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	err := c.superUser("describe SCRAM credentials of")
	var users []string
	if err == nil && len(r.Users) == 0 {
		// Null or empty: every user that has a credential.
		users, err = c.s.be.ScramUsers(c.ctx)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		reply(resp)
		return
	}
	named := len(r.Users) > 0
	count := map[string]int{}
	for _, u := range r.Users {
		if count[u.Name]++; count[u.Name] == 1 {
			users = append(users, u.Name)
		}
	}
	for _, user := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		err := func() error {
			if count[user] > 1 {
				return fmt.Errorf("%w: user %q is named more than once", kerr.DuplicateResource, user)
			}
			creds, err := c.s.be.ScramUser(c.ctx, user)
			if err != nil {
				return err
			}
			for _, m := range scramMechs {
				if cred, ok := creds[m.name]; ok {
					res.CredentialInfos = append(res.CredentialInfos, kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{
						Mechanism: m.code, Iterations: int32(cred.Iterations)})
				}
			}
			if len(res.CredentialInfos) == 0 && named {
				return fmt.Errorf("%w: user %q has no SCRAM credential", kerr.ResourceNotFound, user)
			}
			return nil
		}()
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		if err != nil {
			res.CredentialInfos = nil
		}
		resp.Results = append(resp.Results, res)
	}
	reply(resp)
}

// scramChange is one deletion (del) or upsertion of a user's credential.
type scramChange struct {
	mech       int8
	iterations int32
	salt       []byte
	salted     []byte
	del        bool
}

func handleAlterUserSCRAMCredentials(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	changes := map[string][]scramChange{}
	add := func(user string, ch scramChange) {
		if _, ok := changes[user]; !ok {
			users = append(users, user)
		}
		changes[user] = append(changes[user], ch)
	}
	for _, d := range r.Deletions {
		add(d.Name, scramChange{mech: d.Mechanism, del: true})
	}
	for _, u := range r.Upsertions {
		add(u.Name, scramChange{mech: u.Mechanism, iterations: u.Iterations, salt: u.Salt, salted: u.SaltedPassword})
	}
	authErr := c.superUser("alter SCRAM credentials of")
	for _, user := range users {
		err := authErr
		if err == nil {
			err = c.s.alterScramUser(c.ctx, user, changes[user])
		}
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user,
			ErrorCode: errorCode(err), ErrorMessage: errorMessage(err)})
	}
	reply(resp)
}

// alterScramUser validates every change of one user, then applies them all or none.
func (s *Server) alterScramUser(ctx context.Context, user string, chs []scramChange) error {
	if user == "" {
		return fmt.Errorf("%w: the user name is empty", kerr.UnacceptableCredential)
	}
	seen := map[int8]bool{}
	for _, ch := range chs {
		m, ok := scramMechByCode(ch.mech)
		if !ok {
			return fmt.Errorf("%w: unknown SCRAM mechanism %d (1 is SCRAM-SHA-256, 2 SCRAM-SHA-512)", kerr.UnsupportedSaslMechanism, ch.mech)
		}
		if seen[ch.mech] {
			return fmt.Errorf("%w: %s of user %q is altered twice in one request", kerr.DuplicateResource, m.name, user)
		}
		seen[ch.mech] = true
		if ch.del {
			continue
		}
		switch {
		case ch.iterations < scramMinIterations:
			return fmt.Errorf("%w: %d iterations is too few (at least %d)", kerr.UnacceptableCredential, ch.iterations, scramMinIterations)
		case ch.iterations > scramMaxIterations:
			return fmt.Errorf("%w: %d iterations is too many (at most %d)", kerr.UnacceptableCredential, ch.iterations, scramMaxIterations)
		case len(ch.salt) == 0:
			return fmt.Errorf("%w: the salt is empty", kerr.UnacceptableCredential)
		case len(ch.salted) != m.hash().Size():
			return fmt.Errorf("%w: a %s salted password is %d bytes, not %d", kerr.UnacceptableCredential, m.name, m.hash().Size(), len(ch.salted))
		}
	}
	return s.be.UpdateScramUser(ctx, user, func(creds map[string]resources.KafkaScramCredential) error {
		for _, ch := range chs {
			m, _ := scramMechByCode(ch.mech)
			if ch.del {
				if _, ok := creds[m.name]; !ok {
					return fmt.Errorf("%w: user %q has no %s credential to delete", kerr.ResourceNotFound, user, m.name)
				}
				delete(creds, m.name)
				continue
			}
			creds[m.name] = m.credential(ch.salted, slices.Clone(ch.salt), int(ch.iterations))
		}
		return nil
	})
}
