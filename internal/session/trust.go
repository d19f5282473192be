package session

import (
	"context"

	"spbridge/internal/backend"
	"spbridge/internal/trust"
)

// AskTrust passes the backend's question whether to trust its folder on
// to the host (backend.TrustAsker); a host that cannot ask answers "not
// now".
func (a *applier) AskTrust(ctx context.Context, q trust.Question) trust.Answer {
	if asker, ok := a.host.(backend.TrustAsker); ok {
		return asker.AskTrust(ctx, q)
	}
	return trust.NotNow
}
