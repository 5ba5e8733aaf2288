package notification

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// MailService is the operator's side of mail: the SMTP server, a test mail, the deliveries
// that failed. Provider admins only.
type MailService struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewMailService returns the service; keys seal the server's password.
func NewMailService(pool *pgxpool.Pool, keys *secrets.Keyring) *MailService {
	return &MailService{pool: pool, keys: keys}
}

// MailSettings is the SMTP server as the settings page shows it: never the password, only
// whether one is kept.
type MailSettings struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	TLS         TLS    `json:"tls"`
	Username    string `json:"username"`
	HasPassword bool   `json:"has_password"`
	FromAddress string `json:"from_address"`
	BaseURL     string `json:"base_url"`
	// Set says whether the operator set a server at all.
	Set bool `json:"set"`
}

// MailInput is a server to set. An empty Password keeps the one kept; ClearPassword drops it.
type MailInput struct {
	Host          string `json:"host"`
	Port          string `json:"port"`
	TLS           string `json:"tls"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	ClearPassword bool   `json:"clear_password"`
	FromAddress   string `json:"from_address"`
	BaseURL       string `json:"base_url"`
}

// FailedMail is a mail every attempt of which failed.
type FailedMail struct {
	ID       uuid.UUID `json:"id"`
	To       string    `json:"to"`
	Kind     string    `json:"kind"`
	Error    string    `json:"error"`
	Attempts int       `json:"attempts"`
	FailedAt time.Time `json:"failed_at"`
}

func operator(actor access.Principal) error {
	if !actor.ProviderAdmin {
		return &problem.Denied{Message: "only a provider admin may set up mail"}
	}
	return nil
}

// Settings reads the server the operator set.
func (s *MailService) Settings(ctx context.Context, actor access.Principal) (MailSettings, error) {
	if err := operator(actor); err != nil {
		return MailSettings{}, err
	}
	srv, ok, err := loadServer(ctx, db.Queries(s.pool), s.keys)
	if err != nil || !ok {
		return MailSettings{Port: 587, TLS: StartTLS}, err
	}
	return MailSettings{Host: srv.Host, Port: int(srv.Port), TLS: TLS(srv.Tls), Username: srv.Username, HasPassword: srv.password != "",
		FromAddress: srv.FromAddress, BaseURL: srv.BaseUrl, Set: true}, nil
}

// SetSettings checks and keeps the server, its password sealed. Whether the server answers is
// for Test to say: a server down for a moment is no reason to refuse its address.
func (s *MailService) SetSettings(ctx context.Context, actor access.Principal, in MailInput) error {
	if err := operator(actor); err != nil {
		return err
	}
	v := &problem.ValidationError{}
	host := strings.TrimSpace(in.Host)
	if host == "" || strings.ContainsAny(host, " /:@") {
		v.Add("host", "hostname", "must be the SMTP server's host name or IP address, such as smtp.example.com")
	}
	port, err := strconv.Atoi(strings.TrimSpace(in.Port))
	if err != nil || port < 1 || port > 65535 {
		v.Add("port", "range", "must be a port number from 1 to 65535, such as 587")
	}
	switch TLS(in.TLS) {
	case NoTLS, StartTLS, ImplicitTLS:
	default:
		v.Add("tls", "oneof", "must be none, starttls or tls")
	}
	if !checkAddress(strings.TrimSpace(in.FromAddress)) {
		v.Add("from_address", "email", "must be a mail address such as nimbus@example.com")
	}
	base := strings.TrimRight(strings.TrimSpace(in.BaseURL), "/")
	if !checkBaseURL(base) {
		v.Add("base_url", "url", "must be Nimbus's public address, such as https://nimbus.example.com")
	}
	if in.Password != "" && in.Username == "" {
		v.Add("username", "required", "is needed with a password")
	}
	if err := v.Err(); err != nil {
		return err
	}
	q := db.Queries(s.pool)
	arg := dbgen.SetMailSettingsParams{Host: host, Port: int32(port), Tls: in.TLS, Username: strings.TrimSpace(in.Username),
		FromAddress: strings.TrimSpace(in.FromAddress), BaseUrl: base, SetBy: uuid.NullUUID{UUID: actor.UserID, Valid: true}}
	switch old, err := q.MailSettings(ctx); {
	case in.Password != "":
		if arg.PasswordKeyID, arg.Password, err = s.keys.Seal([]byte(in.Password), passwordData); err != nil {
			return fmt.Errorf("seal the mail password: %w", err)
		}
	case in.ClearPassword || arg.Username == "":
	case err == nil:
		arg.Password, arg.PasswordKeyID = old.Password, old.PasswordKeyID
	}
	if err := q.SetMailSettings(ctx, arg); err != nil {
		return fmt.Errorf("set mail settings: %w", err)
	}
	return nil
}

// Test sends a mail to to through the server set, now, and names the field at fault when it
// cannot: the host when the server cannot be reached, the username when it refuses to sign in,
// the address it refuses.
func (s *MailService) Test(ctx context.Context, actor access.Principal, to string) error {
	if err := operator(actor); err != nil {
		return err
	}
	to = strings.TrimSpace(to)
	if !checkAddress(to) {
		return problem.Invalid("to", "email", "must be a mail address such as you@example.com")
	}
	srv, ok, err := loadServer(ctx, db.Queries(s.pool), s.keys)
	if err != nil {
		return err
	}
	if !ok {
		return problem.Invalid("host", "required", "no mail server is set up: save the settings first")
	}
	err = srv.send(ctx, to, "Nimbus test mail", "Mail from Nimbus reaches you.\n\n"+srv.link("/notifications")+"\n")
	if err == nil {
		return nil
	}
	words := strings.ToLower(err.Error())
	switch {
	case unreachable(err):
		return problem.Invalid("host", "reachable", "cannot reach %s:%d: %s", srv.Host, srv.Port, err)
	case strings.Contains(words, "auth"):
		return problem.Invalid("username", "accepted", "the server refused to sign in: %s", err)
	case strings.Contains(words, "mail from") || strings.Contains(words, "sender"):
		return problem.Invalid("from_address", "accepted", "the server refused the sender: %s", err)
	}
	return problem.Invalid("to", "accepted", "the mail was not sent: %s", err)
}

// Failed lists the latest mails that failed every attempt.
func (s *MailService) Failed(ctx context.Context, actor access.Principal) ([]FailedMail, error) {
	if err := operator(actor); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).FailedMails(ctx)
	if err != nil {
		return nil, fmt.Errorf("list failed mails: %w", err)
	}
	out := make([]FailedMail, len(rows))
	for i, r := range rows {
		out[i] = FailedMail{ID: r.ID, To: r.Email, Kind: r.Kind, Error: r.Error, Attempts: int(r.Attempts), FailedAt: *r.FailedAt}
	}
	return out, nil
}
