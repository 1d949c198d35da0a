package lancestore

import (
	"reflect"
	"testing"
)

func TestStorageOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		o    StorageOptions
		ok   bool
	}{
		{"empty", StorageOptions{}, true},
		{"aws with keys", StorageOptions{Region: "eu-central-1", AccessKeyID: "AKIA", SecretAccessKey: "s3cr3t"}, true},
		{"minio over http", StorageOptions{Endpoint: "http://127.0.0.1:9000", AllowHTTP: true}, true},
		{"https endpoint", StorageOptions{Endpoint: "https://minio.example:9000"}, true},
		{"endpoint left as a reference", StorageOptions{Endpoint: "${S3_ENDPOINT}"}, true},
		{"http without allowHttp", StorageOptions{Endpoint: "http://127.0.0.1:9000"}, false},
		{"endpoint without scheme", StorageOptions{Endpoint: "minio:9000"}, false},
		{"key without secret", StorageOptions{AccessKeyID: "AKIA"}, false},
		{"secret without key", StorageOptions{SecretAccessKey: "s"}, false},
		{"token without keys", StorageOptions{SessionToken: "t"}, false},
	} {
		if err := c.o.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v", c.name, err)
		}
	}
}

func TestS3Environment(t *testing.T) {
	env := StorageOptions{Endpoint: "http://127.0.0.1:9000", AllowHTTP: true}.s3Environment()
	if !reflect.DeepEqual(env, map[string]string{"AWS_ENDPOINT": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true"}) {
		t.Fatalf("environment %v", env)
	}
	if env := (StorageOptions{Region: "eu-west-1", AccessKeyID: "k", SecretAccessKey: "s"}).s3Environment(); len(env) != 0 {
		t.Fatalf("keys and region go through lancedb-go, not the environment: %v", env)
	}
}

func TestIsURI(t *testing.T) {
	for in, want := range map[string]bool{
		"s3://bucket/prefix":   true,
		"gs://bucket":          true,
		"az://container/x":     true,
		"file:///tmp/x":        true,
		"/home/me/.clawmem":    false,
		"~/.clawmem/store":     false,
		"relative/dir":         false,
		"C:\\data\\clawmem":    false,
		"weird dir://x":        false,
		"://no-scheme":         false,
		"./s3-like:dir/x//y":   false,
		"db+s3://bucket/x":     true,
		"/tmp/with://in/path":  false,
		"memory-lancedb-pro/x": false,
	} {
		if got := IsURI(in); got != want {
			t.Errorf("IsURI(%q) = %v, want %v", in, got, want)
		}
	}
}
