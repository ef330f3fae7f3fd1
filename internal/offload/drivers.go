package offload

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"google.golang.org/api/option"
)

// openStore builds the store of a validated configuration.
func openStore(ctx context.Context, c Config) (store, error) {
	switch c.Driver {
	case DriverS3, DriverAWSS3:
		return openS3(ctx, c)
	case DriverGCS:
		return openGCS(ctx, c)
	case DriverAzure:
		return openAzure(ctx, c)
	case DriverFilesystem:
		u, err := url.Parse(c.FileSystemURI)
		if err != nil {
			return nil, fmt.Errorf("%w: fileSystemURI: %w", ErrConfig, err)
		}
		if u.Scheme == "hdfs" {
			return openHDFS(u.Host, u.Path, u.User.Username())
		}
		if err := os.MkdirAll(u.Path, 0o755); err != nil {
			return nil, fmt.Errorf("offload: creating %s: %w", c.FileSystemURI, err)
		}
		// Temporary files next to the objects: the rename on commit stays on one file
		// system. No metadata sidecars: we write none.
		b, err := fileblob.OpenBucket(u.Path, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
		if err != nil {
			return nil, fmt.Errorf("offload: opening %s: %w", c.FileSystemURI, err)
		}
		return &bucketStore{b: b, name: "file://" + u.Path}, nil
	}
	return nil, fmt.Errorf("%w: unknown driver %q", ErrConfig, c.Driver)
}

// withScheme adds https:// to an endpoint given as host[:port].
func withScheme(endpoint string) string {
	if endpoint == "" || strings.Contains(endpoint, "://") {
		return endpoint
	}
	return "https://" + endpoint
}

// S3Bucket says how to reach one S3 bucket.
type S3Bucket struct {
	Bucket, Region    string
	Endpoint          string // an S3-compatible store (host[:port] or a URL); "" for AWS
	AccessKey, Secret string // "" for the AWS default credential chain
}

// OpenS3Bucket opens b. It uses the AWS default credential chain (environment, shared
// profile, instance role) unless credentials are given. An endpoint means an S3-compatible
// store: path-style addressing and no optional checksums, which such stores often refuse.
// The offloader and the lakehouse's warehouse both open their buckets here.
func OpenS3Bucket(ctx context.Context, b S3Bucket) (*blob.Bucket, error) {
	region := b.Region
	if region == "" {
		region = "us-east-1"
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(region)}
	if b.AccessKey != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(b.AccessKey, b.Secret, "")))
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	endpoint := withScheme(b.Endpoint)
	client := s3.NewFromConfig(ac, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	var bo s3blob.Options
	if endpoint != "" {
		bo.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	bk, err := s3blob.OpenBucket(ctx, client, b.Bucket, &bo)
	if err != nil {
		return nil, fmt.Errorf("opening s3 bucket %s: %w", b.Bucket, err)
	}
	return bk, nil
}

func openS3(ctx context.Context, c Config) (store, error) {
	b, err := OpenS3Bucket(ctx, S3Bucket{Bucket: c.Bucket, Region: c.Region, Endpoint: c.ServiceEndpoint,
		AccessKey: c.CredentialID, Secret: c.CredentialSecret})
	if err != nil {
		return nil, fmt.Errorf("offload: %w", err)
	}
	endpoint := withScheme(c.ServiceEndpoint)
	name := "s3://" + c.Bucket
	if endpoint != "" {
		name = strings.TrimSuffix(endpoint, "/") + "/" + c.Bucket
	}
	return &bucketStore{b: b, name: name}, nil
}

// openGCS uses the service-account key file if configured, else the environment's default
// credentials; an endpoint (an emulator) is used without authentication.
func openGCS(ctx context.Context, c Config) (store, error) {
	var opts []option.ClientOption
	switch {
	case c.ServiceEndpoint != "":
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(withScheme(c.ServiceEndpoint), "/")+"/storage/v1/"), option.WithoutAuthentication())
	case c.GCSServiceAccountKeyFile != "":
		opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, c.GCSServiceAccountKeyFile))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("offload: gcs client: %w", err)
	}
	b, err := gcsblob.OpenBucket(ctx, nil, c.Bucket, &gcsblob.Options{Client: client})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("offload: opening gcs bucket %s: %w", c.Bucket, err)
	}
	return &bucketStore{b: b, name: "gs://" + c.Bucket}, nil
}

// openAzure takes the account from AZURE_STORAGE_ACCOUNT and the key from
// AZURE_STORAGE_ACCESS_KEY (Pulsar's variables) or AZURE_STORAGE_KEY; CredentialID and
// CredentialSecret, when set, are the account and key instead. Without a key it falls back
// to gocloud's chain (SAS token, connection string, Azure AD default credentials).
func openAzure(_ context.Context, c Config) (store, error) {
	account, key := c.CredentialID, c.CredentialSecret
	if account == "" {
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
		key = os.Getenv("AZURE_STORAGE_ACCESS_KEY")
		if key == "" {
			key = os.Getenv("AZURE_STORAGE_KEY")
		}
	}
	svc := withScheme(c.ServiceEndpoint)
	if svc == "" {
		if account == "" {
			return nil, fmt.Errorf("%w: azureblob needs managedLedgerOffloadServiceEndpoint or AZURE_STORAGE_ACCOUNT", ErrConfig)
		}
		svc = "https://" + account + ".blob.core.windows.net/"
	}
	if !strings.HasSuffix(svc, "/") {
		svc += "/"
	}
	var client *container.Client
	var err error
	if account != "" && key != "" {
		cred, cerr := azblob.NewSharedKeyCredential(account, key)
		if cerr != nil {
			return nil, fmt.Errorf("%w: azure shared key: %w", ErrConfig, cerr)
		}
		client, err = container.NewClientWithSharedKeyCredential(svc+c.Bucket, cred, nil)
	} else {
		client, err = azureblob.NewDefaultClient(azureblob.ServiceURL(svc), azureblob.ContainerName(c.Bucket))
	}
	if err != nil {
		return nil, fmt.Errorf("offload: azure client for %s%s: %w", svc, c.Bucket, err)
	}
	b, err := azureblob.OpenBucket(context.Background(), client, nil)
	if err != nil {
		return nil, fmt.Errorf("offload: opening azure container %s: %w", c.Bucket, err)
	}
	return &bucketStore{b: b, name: svc + c.Bucket}, nil
}
