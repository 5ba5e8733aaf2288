package auth_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"nimbus/app/apptest"
)

// keyOrigin is where the tests' browser reached Nimbus.
const keyOrigin = "https://nimbus.test"

// softKey is a security key in software, for tests: one ES256 credential with attestation
// "none", answering as a browser at keyOrigin would pass its answers on.
type softKey struct {
	id    []byte
	priv  *ecdsa.PrivateKey
	count uint32
}

func newSoftKey(t testing.TB) *softKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	apptest.Must(t, err)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &softKey{id: id, priv: priv}
}

var b64u = base64.RawURLEncoding.EncodeToString

func clientData(typ string, challenge protocol.URLEncodedBase64) []byte {
	b, _ := json.Marshal(map[string]string{"type": typ, "challenge": challenge.String(), "origin": keyOrigin})
	return b
}

// authData is the authenticator data for rpID with flags, and attested, if given.
func (k *softKey) authData(rpID string, flags byte, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	b := append(h[:], flags)
	b = binary.BigEndian.AppendUint32(b, k.count)
	return append(b, attested...)
}

// create answers BeginKey's options: the body the page's script posts to finish.
func (k *softKey) create(t testing.TB, opts *protocol.CredentialCreation) *http.Request {
	t.Helper()
	pub := k.priv.PublicKey
	cose, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         1, XCoord: pub.X.FillBytes(make([]byte, 32)), YCoord: pub.Y.FillBytes(make([]byte, 32)),
	})
	apptest.Must(t, err)
	attested := append(make([]byte, 16), byte(len(k.id)>>8), byte(len(k.id)))
	attested = append(append(attested, k.id...), cose...)
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": k.authData(opts.Response.RelyingParty.ID, 0x45, attested)})
	apptest.Must(t, err)
	return answer(t, map[string]any{"id": b64u(k.id), "rawId": b64u(k.id), "type": "public-key",
		"response": map[string]string{"attestationObject": b64u(obj), "clientDataJSON": b64u(clientData("webauthn.create", opts.Response.Challenge))}})
}

// get answers BeginKeySignIn's options, counting one more use of the key.
func (k *softKey) get(t testing.TB, opts *protocol.CredentialAssertion) []byte {
	t.Helper()
	k.count++
	data := k.authData(opts.Response.RelyingPartyID, 0x05, nil)
	cd := clientData("webauthn.get", opts.Response.Challenge)
	h := sha256.Sum256(cd)
	sum := sha256.Sum256(append(append([]byte{}, data...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, sum[:])
	apptest.Must(t, err)
	b, err := json.Marshal(map[string]any{"id": b64u(k.id), "rawId": b64u(k.id), "type": "public-key",
		"response": map[string]string{"authenticatorData": b64u(data), "clientDataJSON": b64u(cd), "signature": b64u(sig)}})
	apptest.Must(t, err)
	return b
}

func answer(t testing.TB, body any) *http.Request {
	t.Helper()
	b, err := json.Marshal(body)
	apptest.Must(t, err)
	return post(b)
}

func post(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}
