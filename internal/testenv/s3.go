package testenv

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The S3-compatible server: versitygw's posix backend, built from the Go module proxy.
const (
	versitygwPkg     = "github.com/versity/versitygw/cmd/versitygw"
	versitygwVersion = "v1.8.0"
)

// S3Server is a running S3-compatible server.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:port
	Region    string
	AccessKey string
	SecretKey string
	Dir       string // the posix root: one directory per bucket
	Proc      *Process
}

// StartS3 builds (once) and starts an S3-compatible server on a free loopback port with its
// data in a temporary directory; it is stopped when the test ends.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	bin := GoBinary(t, "versitygw", versitygwPkg, versitygwVersion)
	s := &S3Server{Region: "us-east-1", AccessKey: "magnetartest", SecretKey: "magnetartestsecret", Dir: filepath.Join(t.TempDir(), "s3")}
	mkdir(t, s.Dir)
	port := FreePort(t)
	addr := hostPort(port)
	s.Proc = Start(t, bin, []string{"--port", addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "--quiet", "posix", s.Dir}, nil, "")
	WaitTCP(t, s.Proc, "versitygw", addr)
	s.Endpoint = "http://" + addr
	return s
}

// Client returns an S3 client of the server's root user.
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// Third-party stores want no optional checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// CreateBucket creates a bucket.
func (s *S3Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("testenv: creating bucket %s: %v", name, err)
	}
}

// Keys lists the object keys of a bucket.
func (s *S3Server) Keys(t testing.TB, bucket string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("testenv: listing bucket %s: %v", bucket, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}
