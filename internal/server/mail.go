package server

import (
	"context"
	"net/url"
	"time"

	"github.com/perch-dev/perch/internal/mail"
)

// mailTimeout bounds one background send.
const mailTimeout = time.Minute

// sendMail sends m in the background, so that a slow or failing mail server
// neither delays nor fails the request that caused it; failures are logged.
// Close waits for sends under way.
func (s *Server) sendMail(ctx context.Context, m mail.Message) {
	if s.mailer == nil {
		s.log.Warn("no mailer configured; mail dropped", "to", m.To, "kind", m.Kind)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailTimeout)
	s.mailing.Go(func() {
		defer cancel()
		if err := s.mailer.Send(ctx, m); err != nil {
			s.log.Error("sending mail failed", "to", m.To, "kind", m.Kind, "err", err)
		}
	})
}

// link is an absolute URL on this server's public address.
func (s *Server) link(path, token string) string {
	return s.opts.BaseURL + path + "?token=" + url.QueryEscape(token)
}
