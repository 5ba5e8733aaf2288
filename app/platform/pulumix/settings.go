package pulumix

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	pulumiws "github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"go.yaml.in/yaml/v3"

	"nimbus/app/kernel/objstore"
)

// A stack's files are written here, not by the CLI: `stack init`, `stack select` and one
// `config set --secret` per secret input cost an engine process each, some 0.3–0.7 s apiece,
// where the operation itself needs one. What they write is small and stable:
//
//   - in the working directory, Pulumi.<stack>.yaml: the passphrase's salt (the salt, and
//     "pulumi" encrypted with the key derived from it, so that a wrong passphrase is noticed),
//     and the config, secrets encrypted with that key;
//   - in a DIY backend, .pulumi/meta.yaml (the backend's layout) and the stack's empty
//     checkpoint, .pulumi/stacks/<project>/<stack>.json.

// checkpointKey is where a DIY backend keeps the stack's state.
func checkpointKey(project, stack string) string {
	return path.Join(".pulumi", "stacks", project, stack+".json")
}

const metaKey = ".pulumi/meta.yaml"

// readStack reports whether the backend holds the stack and, when salt is asked for, the
// passphrase salt its state records.
func readStack(ctx context.Context, b Bucket, stack string, salt bool) (bool, string, error) {
	rc, err := b.Get(ctx, checkpointKey(project, stack))
	if errors.Is(err, objstore.ErrNotFound) {
		return false, "", nil
	} else if err != nil {
		return false, "", err
	}
	defer rc.Close()
	if !salt {
		return true, "", nil
	}
	var chk struct {
		Checkpoint struct {
			Latest *struct {
				Secrets *struct {
					Type  string `json:"type"`
					State struct {
						Salt string `json:"salt"`
					} `json:"state"`
				} `json:"secrets_providers"`
			} `json:"latest"`
		} `json:"checkpoint"`
	}
	if err := json.NewDecoder(rc).Decode(&chk); err != nil {
		return true, "", fmt.Errorf("read the checkpoint of %s: %w", stack, err)
	}
	if l := chk.Checkpoint.Latest; l != nil && l.Secrets != nil && l.Secrets.Type == "passphrase" {
		return true, l.Secrets.State.Salt, nil
	}
	return true, "", nil
}

// createStack writes what `stack init` writes into a DIY backend: the layout marker, when the
// backend is new (without it the CLI takes a backend holding stacks for the old layout), and an
// empty checkpoint.
func createStack(ctx context.Context, b Bucket, stack string) error {
	if rc, err := b.Get(ctx, metaKey); errors.Is(err, objstore.ErrNotFound) {
		meta := []byte("version: 1\n")
		if err := b.PutEngine(ctx, metaKey, bytes.NewReader(meta), int64(len(meta))); err != nil {
			return fmt.Errorf("create stack %s: %w", stack, err)
		}
	} else if err != nil {
		return fmt.Errorf("create stack %s: %w", stack, err)
	} else {
		rc.Close()
	}
	chk := fmt.Appendf(nil, `{"version":3,"checkpoint":{"stack":"organization/%s/%s","latest":null}}`, project, stack)
	if err := b.PutEngine(ctx, checkpointKey(project, stack), bytes.NewReader(chk), int64(len(chk))); err != nil {
		return fmt.Errorf("create stack %s: %w", stack, err)
	}
	return nil
}

// writeSettings replaces the stack's settings file with st's inputs, so that an input the
// deployment no longer has does not linger. The salt of an earlier file is kept. Without one,
// a stack whose salt is fixed gets the salt its name and passphrase make, the same on every
// replica, so that a plan saved on one is read on another before any state records a salt; so
// does a stack with secrets to encrypt, and any other leaves it to the engine. A state
// encrypted under an older salt is still read through the salt the state records.
func (r *Runner) writeSettings(file string, st Stack, fixSalt bool) error {
	salt := ""
	if data, err := os.ReadFile(file); err == nil {
		var old struct {
			Salt string `yaml:"encryptionsalt"`
		}
		if err := yaml.Unmarshal(data, &old); err != nil {
			return fmt.Errorf("read stack settings: %w", err)
		}
		salt = old.Salt
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read stack settings: %w", err)
	}
	var crypter config.Crypter
	if salt == "" && (fixSalt || len(st.Secrets) > 0) {
		salt = stackSalt(st)
	}
	if len(st.Secrets) > 0 || strings.HasSuffix(salt, ":") {
		var err error
		if salt, crypter, err = r.keys.crypter(st.Passphrase, salt); err != nil {
			return fmt.Errorf("stack %s: %w", st.Name, err)
		}
	}
	ps := &pulumiws.ProjectStack{EncryptionSalt: salt, Config: config.Map{}}
	for k, v := range st.Config {
		if _, dup := st.Secrets[k]; dup {
			return fmt.Errorf("config %s: both a plain and a secret input", k)
		}
		key, err := inputKey(k)
		if err != nil {
			return err
		}
		value, err := configValue(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
		if err := ps.Config.Set(key, value, false); err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
	}
	for k, v := range st.Secrets {
		key, err := inputKey(k)
		if err != nil {
			return err
		}
		sealed, err := crypter.EncryptValue(context.Background(), v)
		if err != nil {
			return fmt.Errorf("secret config %s: %w", k, err)
		}
		if err := ps.Config.Set(key, config.NewSecureValue(sealed), false); err != nil {
			return fmt.Errorf("secret config %s: %w", k, err)
		}
	}
	for k, v := range st.Settings {
		key, err := config.ParseKey(k)
		if err != nil || key.Namespace() == project || key.Namespace() == "pulumi" {
			return fmt.Errorf("provider setting %q: not a setting of a provider's package", k)
		}
		if err := ps.Config.Set(key, config.NewValue(v), false); err != nil {
			return fmt.Errorf("provider setting %s: %w", k, err)
		}
	}
	if err := ps.Save(file); err != nil {
		return fmt.Errorf("write stack settings: %w", err)
	}
	return nil
}

// forgetUnrecordedSalt drops the settings of a new stack whose engine made its salt when the
// engine wrote no state recording it (it failed before changing anything): that salt is this
// replica's alone, and a plan saved with it could not be read on another. The next operation
// writes the settings again, with the salt the state records or the one the stack's name makes.
func (r *Runner) forgetUnrecordedSalt(ctx context.Context, stack string) error {
	state, err := r.stateOf(stack)
	if err != nil {
		return err
	}
	if _, salt, err := readStack(ctx, state, stack, true); err != nil || salt != "" {
		return err
	}
	if err := os.Remove(filepath.Join(r.stackDir(stack), "Pulumi."+stack+".yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget the settings of %s: %w", stack, err)
	}
	return nil
}

// inputKey is a program's input in the project's namespace: an input is never a provider's
// setting, whatever it is called.
func inputKey(name string) (config.Key, error) {
	if !validInput.MatchString(name) {
		return config.Key{}, fmt.Errorf("input %q: an input's name is letters, digits and _, starting with a letter", name)
	}
	return config.MustMakeKey(project, name), nil
}

// stackSalt is the salt a shared stack starts with, made from its name and passphrase, in the
// form a settings file holds it: v1:<salt>: with the check of the passphrase still to come.
func stackSalt(st Stack) string {
	mac := hmac.New(sha256.New, []byte(st.Passphrase))
	mac.Write([]byte("salt of stack " + st.Name))
	return "v1:" + base64.StdEncoding.EncodeToString(mac.Sum(nil)[:8]) + ":"
}

// keyring keeps the keys derived from stacks' passphrases. A key takes a million rounds of
// PBKDF2 (0.2 s here), and a stack's key never changes: each is derived once per server.
type keyring struct {
	mu   sync.Mutex
	keys map[[32]byte]config.Crypter
}

// maxKeys bounds the ring; past it, it starts again empty.
const maxKeys = 4096

// crypter returns the crypter of passphrase and salt, and the salt in the form a stack's
// settings file holds it: a salt without its check ("v1:<salt>:", see stackSalt) gets one.
func (k *keyring) crypter(passphrase, salt string) (string, config.Crypter, error) {
	if encoded, ok := strings.CutSuffix(strings.TrimPrefix(salt, "v1:"), ":"); ok && !strings.Contains(encoded, ":") {
		raw, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return "", nil, err
		}
		c := config.NewSymmetricCrypterFromPassphrase(passphrase, raw)
		check, err := c.EncryptValue(context.Background(), "pulumi")
		if err != nil {
			return "", nil, err
		}
		salt = "v1:" + base64.StdEncoding.EncodeToString(raw) + ":" + check
		k.put(passphrase, salt, c)
		return salt, c, nil
	}
	if c, ok := k.get(passphrase, salt); ok {
		return salt, c, nil
	}
	// v1:<salt>:<"pulumi" encrypted>, the check being a v1:<nonce>:<ciphertext> itself.
	rest, ok := strings.CutPrefix(salt, "v1:")
	encoded, check, cut := strings.Cut(rest, ":")
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if !ok || !cut || err != nil {
		return "", nil, errors.New("the stack's encryption salt is malformed")
	}
	c := config.NewSymmetricCrypterFromPassphrase(passphrase, raw)
	if plain, err := c.DecryptValue(context.Background(), check); err != nil || plain != "pulumi" {
		return "", nil, errors.New("the stack's secrets passphrase does not match its settings")
	}
	k.put(passphrase, salt, c)
	return salt, c, nil
}

func ringKey(passphrase, salt string) [32]byte {
	return sha256.Sum256([]byte(passphrase + "\x00" + salt))
}

func (k *keyring) get(passphrase, salt string) (config.Crypter, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.keys[ringKey(passphrase, salt)]
	return c, ok
}

func (k *keyring) put(passphrase, salt string, c config.Crypter) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil || len(k.keys) >= maxKeys {
		k.keys = map[[32]byte]config.Crypter{}
	}
	k.keys[ringKey(passphrase, salt)] = c
}
