package localpg

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Whatever answers on the socket — a server of someone who put their own socket in its place,
// say — is never sent the password, nor its MD5 digest, and one that asks for no password at
// all is not used.
func TestURL_NeverSendsThePasswordToAServerNotAskingForSCRAM(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  pgproto3.BackendMessage
	}{
		{"cleartext password", &pgproto3.AuthenticationCleartextPassword{}},
		{"md5 digest", &pgproto3.AuthenticationMD5Password{Salt: [4]byte{1, 2, 3, 4}}},
		{"no password", &pgproto3.AuthenticationOk{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "lpg")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			told := make(chan pgproto3.FrontendMessage, 1)
			go func() {
				defer close(told)
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				b := pgproto3.NewBackend(conn, conn)
				if _, err := b.ReceiveStartupMessage(); err != nil {
					return
				}
				b.Send(tc.ask)
				switch tc.ask.(type) {
				case *pgproto3.AuthenticationCleartextPassword:
					b.SetAuthType(pgproto3.AuthTypeCleartextPassword)
				case *pgproto3.AuthenticationMD5Password:
					b.SetAuthType(pgproto3.AuthTypeMD5Password)
				default:
					b.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
					b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
				}
				if err := b.Flush(); err != nil {
					return
				}
				// The client's next message: a password, or its goodbye.
				if msg, err := b.Receive(); err == nil {
					told <- msg
				}
			}()

			s := &Server{socketDir: dir, password: "the-cluster-password"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, s.URL(DatabaseName))
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connected to a server that did not ask for scram-sha-256")
			}
			ln.Close()
			if msg, ok := (<-told).(*pgproto3.PasswordMessage); ok {
				t.Fatalf("the server was sent %q", msg.Password)
			}
		})
	}
}
