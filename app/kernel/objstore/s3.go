package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultRegion is the region used when none is configured; most S3-compatible servers ignore
// it, but request signatures name one.
const DefaultRegion = "us-east-1"

// S3Config says how to reach a bucket on an S3-compatible server.
type S3Config struct {
	Endpoint  string // the server's URL: http://127.0.0.1:8333, https://s3.example.com
	Bucket    string
	AccessKey string
	SecretKey string
	Region    string // DefaultRegion when empty
}

// LogValue leaves the secret key out of every log line that includes the config.
func (c S3Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("endpoint", c.Endpoint), slog.String("bucket", c.Bucket),
		slog.String("access_key", c.AccessKey), slog.String("region", c.region()))
}

// String leaves the secret key out of any printed config too.
func (c S3Config) String() string {
	return fmt.Sprintf("s3 endpoint=%s bucket=%s access_key=%s secret_key=*** region=%s",
		c.Endpoint, c.Bucket, c.AccessKey, c.region())
}

// GoString keeps %#v from printing the secret key.
func (c S3Config) GoString() string { return c.String() }

func (c S3Config) region() string {
	if c.Region == "" {
		return DefaultRegion
	}
	return c.Region
}

// ParseEndpoint checks that an endpoint is an http or https URL of a server, with no path: the
// bucket is named apart.
func ParseEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL such as http://127.0.0.1:8333", endpoint)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("%q is not a server URL such as http://127.0.0.1:8333 or https://s3.example.com (scheme and host only)", endpoint)
	}
	return u, nil
}

// S3 keeps blobs in a bucket of an S3-compatible server, where every replica sees them.
type S3 struct {
	cfg    S3Config
	client *minio.Client
}

// NewS3 connects to the server and creates the bucket when it is missing. It fails when the
// server cannot be reached or refuses the credentials: better at start than at the first
// deployment.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	u, err := ParseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, errors.New("no bucket named")
	}
	cfg.Region = cfg.region()
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: u.Scheme == "https",
		Region: cfg.Region,
		// Virtual-host style needs a DNS name per bucket, which self-hosted servers rarely have.
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", cfg.Endpoint, err)
	}
	s := &S3{cfg: cfg, client: client}
	exists, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("reach bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !exists {
		err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region})
		// Another replica starting at the same moment may have made it first.
		if code := minio.ToErrorResponse(err).Code; err != nil && code != minio.BucketAlreadyOwnedByYou && code != minio.BucketAlreadyExists {
			return nil, fmt.Errorf("create bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
		}
	}
	return s, nil
}

// Config is what the store was made with.
func (s *S3) Config() S3Config { return s.cfg }

// Put uploads the blob; S3 makes it visible only once complete.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkPut(key); err != nil {
		return err
	}
	return s.put(ctx, key, r, size)
}

// PutEngine writes a file in the engine's area, as Put writes a blob.
func (s *S3) PutEngine(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkEngineKey(key); err != nil {
		return err
	}
	return s.put(ctx, key, r, size)
}

func (s *S3) put(ctx context.Context, key string, r io.Reader, size int64) error {
	if _, err := s.client.PutObject(ctx, s.cfg.Bucket, key, r, size, minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Get opens the blob for reading.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err == nil {
		// GetObject sends nothing until the first read; Stat asks now, so that a missing blob
		// is reported here rather than as a read error later.
		_, err = obj.Stat()
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, notFound(key)
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return obj, nil
}

// Delete removes the blob; a missing blob is no error.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List returns the keys under prefix (a directory, such as "logs/"), sorted.
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	// Stops the listing goroutine when the loop below returns early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var keys []string
	for o := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, o.Err)
		}
		keys = append(keys, o.Key)
	}
	slices.Sort(keys)
	return keys, nil
}

// Ping checks that the server answers and the bucket is there.
func (s *S3) Ping(ctx context.Context) error {
	exists, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("bucket %s at %s: %w", s.cfg.Bucket, s.cfg.Endpoint, err)
	}
	if !exists {
		return fmt.Errorf("bucket %s at %s does not exist", s.cfg.Bucket, s.cfg.Endpoint)
	}
	return nil
}

// BackendURL is the Pulumi DIY backend that keeps stack state in the bucket, beside the blobs
// (under .pulumi/). The endpoint keeps its scheme: for a scheme-less one the engine assumes
// https, and it would not reach a plain-http server.
func (s *S3) BackendURL() string {
	q := url.Values{"endpoint": {s.cfg.Endpoint}, "region": {s.cfg.Region}, "s3ForcePathStyle": {"true"}}
	return "s3://" + s.cfg.Bucket + "?" + q.Encode()
}

// BackendEnv is the environment the engine needs to reach the bucket. The credentials go in the
// environment only: a command line is visible to every user of the machine.
func (s *S3) BackendEnv() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":     s.cfg.AccessKey,
		"AWS_SECRET_ACCESS_KEY": s.cfg.SecretKey,
		"AWS_REGION":            s.cfg.Region,
	}
}
