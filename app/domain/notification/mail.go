package notification

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	gomail "github.com/wneessen/go-mail"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// TLS is how Nimbus speaks to the SMTP server.
type TLS string

// The TLS modes: none, STARTTLS required on a plain connection, or TLS from the start.
const (
	NoTLS       TLS = "none"
	StartTLS    TLS = "starttls"
	ImplicitTLS TLS = "tls"
)

// passwordData binds the sealed password to its column: a ciphertext copied elsewhere does
// not open.
var passwordData = []byte("mail_settings.password")

// server is the SMTP server as a mail is sent through it: its settings, the password opened.
type server struct {
	dbgen.MailSetting
	password string
}

// loadServer reads the server the operator set; ok is false when none is.
func loadServer(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring) (server, bool, error) {
	s, err := q.MailSettings(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return server{}, false, nil
	}
	if err != nil {
		return server{}, false, fmt.Errorf("read mail settings: %w", err)
	}
	out := server{MailSetting: s}
	if len(s.Password) > 0 {
		p, err := keys.Open(s.PasswordKeyID, s.Password, passwordData)
		if err != nil {
			return server{}, false, fmt.Errorf("open the mail password: %w", err)
		}
		out.password = string(p)
	}
	return out, true, nil
}

// sendTimeout bounds one conversation with the SMTP server.
const sendTimeout = 30 * time.Second

// send sends one plain-text mail to to through s.
func (s server) send(ctx context.Context, to, subject, body string) error {
	m := gomail.NewMsg()
	if err := m.From(s.FromAddress); err != nil {
		return fmt.Errorf("from address: %w", err)
	}
	if err := m.To(to); err != nil {
		return fmt.Errorf("recipient %s: %w", to, err)
	}
	m.Subject(subject)
	m.SetBodyString(gomail.TypeTextPlain, body)
	opts := []gomail.Option{gomail.WithPort(int(s.Port)), gomail.WithTimeout(sendTimeout)}
	switch TLS(s.Tls) {
	case NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case StartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	}
	if s.Username != "" {
		// Without TLS the password goes in the clear, as the operator chose for a relay on a
		// trusted network; with TLS the strongest mechanism the server offers is used.
		auth := gomail.SMTPAuthAutoDiscover
		if TLS(s.Tls) == NoTLS {
			auth = gomail.SMTPAuthPlainNoEnc
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(s.Username), gomail.WithPassword(s.password))
	}
	c, err := gomail.NewClient(s.Host, opts...)
	if err != nil {
		return err
	}
	return c.DialAndSendWithContext(ctx, m)
}

// link is the address of a page of Nimbus as a mail gives it.
func (s server) link(path string) string { return strings.TrimRight(s.BaseUrl, "/") + path }

// MailArgs sends one mail.
type MailArgs struct {
	Mail uuid.UUID `json:"mail"`
}

// Kind names the job in River.
func (MailArgs) Kind() string { return "notification_mail" }

// InsertOpts puts mails with the deliveries, out of the way of long operations. The worker
// ends the mail failed after its own number of attempts, never more than these.
func (MailArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxMailAttempts, Queue: jobs.DeliveryQueue}
}

// Mail attempts: DefaultMailAttempts unless the operator says otherwise, at most MaxMailAttempts.
const (
	DefaultMailAttempts = 8
	MaxMailAttempts     = 25
)

// MailStatus is where a mail is in its life.
type MailStatus string

// A mail is pending through its attempts, then sent, or failed after its last.
const (
	MailPending MailStatus = "pending"
	MailSent    MailStatus = "sent"
	MailFailed  MailStatus = "failed"
)

// MailMachine is a mail's life; this file alone records mails and their attempts.
var MailMachine = lifecycle.Machine[MailStatus]{
	Name: "mail", Table: "notification_mails", Column: "status", Writer: "app/domain/notification/mail.go", Start: MailPending,
	Moves: map[MailStatus][]MailStatus{MailPending: {MailPending, MailSent, MailFailed}},
}

// mailNotifications records, in tx, a mail for each notification of event whose reader takes
// its kind by mail (on says whether the kind is on for those who never said), and queues them.
func mailNotifications(ctx context.Context, tx pgx.Tx, q *dbgen.Queries, event uuid.UUID, on bool) error {
	mails, err := q.MailNotifications(ctx, dbgen.MailNotificationsParams{Event: event, OnDefault: on})
	if err != nil {
		return fmt.Errorf("mail the notifications of event %s: %w", event, err)
	}
	return queueMails(ctx, tx, mails)
}

func queueMails(ctx context.Context, tx pgx.Tx, mails []uuid.UUID) error {
	for _, id := range mails {
		if _, err := (jobs.Running{}).InsertTx(ctx, tx, MailArgs{Mail: id}, nil); err != nil {
			return fmt.Errorf("queue mail %s: %w", id, err)
		}
	}
	return nil
}

// Mailer sends the notifications' mails. A mail whose every attempt failed ends failed, with
// the last error, for its reader's inbox and the operator's settings page; its notification
// stays in the inbox either way.
type Mailer struct {
	river.WorkerDefaults[MailArgs]
	pool     *pgxpool.Pool
	keys     *secrets.Keyring
	attempts int
	log      *slog.Logger
}

// NewMailer returns the worker; attempts bounds the tries of one mail (DefaultMailAttempts
// when zero).
func NewMailer(pool *pgxpool.Pool, keys *secrets.Keyring, attempts int, log *slog.Logger) *Mailer {
	if attempts < 1 || attempts > MaxMailAttempts {
		attempts = DefaultMailAttempts
	}
	return &Mailer{pool: pool, keys: keys, attempts: attempts, log: log}
}

// Timeout bounds one attempt.
func (w *Mailer) Timeout(*river.Job[MailArgs]) time.Duration { return 2 * sendTimeout }

// Work sends the mail once; a mail sent or failed already is let be.
func (w *Mailer) Work(ctx context.Context, job *river.Job[MailArgs]) error {
	q := db.Queries(w.pool)
	m, err := q.MailToSend(ctx, job.Args.Mail)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && MailMachine.Ended(MailStatus(m.Status)) {
		return nil
	}
	if err != nil {
		return err
	}
	srv, ok, err := loadServer(ctx, q, w.keys)
	if err != nil {
		return err
	}
	if ok {
		var subject, body string
		if subject, body, err = words(ctx, q, srv, m); err != nil {
			return err
		}
		err = srv.send(ctx, m.Email, subject, body)
	} else {
		err = errors.New("no mail server is set up")
	}
	if err == nil {
		_, err := q.MailSent(ctx, dbgen.MailSentParams{ID: m.ID, Status: string(MailSent), Sources: MailMachine.SourceNames(MailSent)})
		return err
	}
	final := job.Attempt >= w.attempts
	w.log.Warn("mail not sent", "mail", m.ID, "attempt", job.Attempt, "final", final, "error", err)
	to := MailPending
	if final {
		to = MailFailed
	}
	if _, ferr := q.MailAttemptFailed(ctx, dbgen.MailAttemptFailedParams{ID: m.ID, Error: err.Error(), Status: string(to),
		Sources: MailMachine.SourceNames(to)}); ferr != nil {
		return ferr
	}
	if final {
		return nil
	}
	return err
}

// words words a mail: one notification's title and a link to its page, or a digest's list.
// It names nothing the notifications do not, and no secret.
func words(ctx context.Context, q *dbgen.Queries, srv server, m dbgen.MailToSendRow) (subject, body string, err error) {
	if m.NotificationID.Valid {
		return m.Title, m.Title + "\n\n" + srv.link(m.Link) + "\n\n" + footer(srv), nil
	}
	list, err := q.DigestOf(ctx, dbgen.DigestOfParams{UserID: m.UserID, Since: *m.Since, Until: m.CreatedAt, OnByDefault: onByDefault()})
	if err != nil {
		return "", "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "What you have not read in Nimbus since %s:\n\n", m.Since.UTC().Format("2006-01-02 15:04 UTC"))
	for _, n := range list {
		fmt.Fprintf(&b, "- %s\n  %s\n", n.Title, srv.link(n.Link))
	}
	b.WriteString("\n" + footer(srv))
	return fmt.Sprintf("Nimbus: %d unread %s", len(list), plural(len(list), "notification", "notifications")), b.String(), nil
}

func footer(srv server) string {
	return "Choose what Nimbus tells you: " + srv.link("/notifications/preferences")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// DigestArgs queues the digests that are due.
type DigestArgs struct{}

// Kind names the job in River.
func (DigestArgs) Kind() string { return "notification_digest" }

// InsertOpts puts the digests with the housekeeping.
func (DigestArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Digester queues each digest reader's mail once a day, of what they have not read.
type Digester struct {
	river.WorkerDefaults[DigestArgs]
	pool *pgxpool.Pool
}

// NewDigester returns the worker.
func NewDigester(pool *pgxpool.Pool) *Digester { return &Digester{pool: pool} }

// Work queues the due digests, in the transaction that moves each reader's span on.
func (w *Digester) Work(ctx context.Context, _ *river.Job[DigestArgs]) error {
	return db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		mails, err := db.Queries(tx).DueDigests(ctx, onByDefault())
		if err != nil {
			return fmt.Errorf("queue digests: %w", err)
		}
		return queueMails(ctx, tx, mails)
	})
}

// DigestSchedule looks for due digests every quarter hour.
func DigestSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(15*time.Minute), func() (river.JobArgs, *river.InsertOpts) {
		return DigestArgs{}, nil
	}, nil)
}

// checkAddress reads an address a mail is sent from or to.
func checkAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

// checkBaseURL reads Nimbus's public address: absolute, http or https, no query.
func checkBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// unreachable says whether a send failed before the server answered.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}
