package resolver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math/big"

	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// secretResolver makes up a secret, such as a password, for an input bound to it. The value
// is generated once per deployment: the caller keeps it sealed with the deployment's other
// secret inputs and asks again only to rotate it.
type secretResolver struct{}

// secretConfig says what secrets look like in an environment.
type secretConfig struct {
	Length   int    `json:"length"`
	Alphabet string `json:"alphabet,omitempty"` // letters and digits when empty
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (secretResolver) Type() string      { return "secret_provisioner" }
func (secretResolver) Outputs() []string { return []string{"value"} }

func (secretResolver) Check(_ context.Context, _ *dbgen.Queries, _ Scope, raw json.RawMessage, v *problem.ValidationError) {
	var c secretConfig
	if err := strictJSON(raw, &c); err != nil {
		v.Add("config", "json", "must be {\"length\": …, \"alphabet\": optional}: %v", err)
		return
	}
	if c.Length < 12 || c.Length > 256 {
		v.Add("config.length", "range", "must be between 12 and 256")
	}
	if c.Alphabet != "" && len([]rune(c.Alphabet)) < 10 {
		v.Add("config.alphabet", "length", "needs at least 10 characters to make secrets hard to guess")
	}
}

func (secretResolver) Resolve(_ context.Context, _ *dbgen.Queries, c Call) (map[string]any, error) {
	var cfg secretConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		return nil, err
	}
	alphabet := []rune(cfg.Alphabet)
	if len(alphabet) == 0 {
		alphabet = []rune(alnum)
	}
	out := make([]rune, cfg.Length)
	for i := range out {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return nil, err
		}
		out[i] = alphabet[n.Int64()]
	}
	return map[string]any{"value": string(out)}, nil
}

// Secret reports whether a resolver type produces secrets, which must be sealed and kept.
func Secret(typ string) bool { return typ == "secret_provisioner" }
