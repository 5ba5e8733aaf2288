package event

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/component"
	"nimbus/db/dbgen"
)

// Own is one of Nimbus's own events: what it tells of (Type, such as deployment.succeeded or
// stack.state_changed) and what it is about. It is written to the log in the transaction of
// the change it tells of, so that it is sent exactly when the change happens, and routed like
// any other event.
type Own struct {
	Type    string
	Subject string
	// Tenant, Environment, Instance and Deployment name what the event is about; zero where
	// it is about none.
	Tenant, Environment, Instance, Deployment uuid.UUID
	Data                                      map[string]any
}

// Emit writes an event of Nimbus's own in tx and queues its routing.
func Emit(ctx context.Context, tx pgx.Tx, queue component.JobInserter, e Own) error {
	target := Target{}
	if e.Instance != uuid.Nil {
		target.Instance = e.Instance.String()
	} else if e.Deployment != uuid.Nil {
		target.Deployment = e.Deployment.String()
	}
	payload, err := json.Marshal(stored{Source: "nimbus", Data: Redacted(e.Data), Target: target})
	if err != nil {
		return err
	}
	id, err := dbgen.New(tx).LogOwnEvent(ctx, dbgen.LogOwnEventParams{Type: e.Type, Subject: e.Subject, Payload: payload,
		Tenant: null(e.Tenant), Environment: null(e.Environment), Instance: null(e.Instance), Deployment: null(e.Deployment)})
	if err != nil {
		return fmt.Errorf("log event %s: %w", e.Type, err)
	}
	_, err = queue.InsertTx(ctx, tx, RouteArgs{Event: id}, nil)
	return err
}
