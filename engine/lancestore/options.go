// Package lancestore is clawmem's second store backend: a LanceDB table in
// the schema memory-lancedb-pro writes (id, text, vector, category, scope,
// importance, timestamp, metadata), local or on object storage (s3://...),
// through github.com/lancedb/lancedb-go.
//
// lancedb-go links LanceDB's native library, so the backend is compiled
// only with the build tag `lancedb`; a default build gets stubs whose Open
// and OpenLegacy say so. What every build has: the options, the SQL
// predicates and their escaping, the mapping of plugin rows to memories,
// the ranking of vector hits and Copy, which moves the memories of a
// plugin's table into any engine.Store.
package lancestore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TableName is the table both OpenClaw memory plugins keep their memories in.
const TableName = "memories"

// ErrNotBuilt is returned by Open and OpenLegacy in a build without the
// lancedb tag.
var ErrNotBuilt = errors.New("clawmem was built without -tags lancedb, so it has no LanceDB backend: " +
	"build it with `go build -tags lancedb` and LanceDB's native library (README, \"LanceDB backend\"), " +
	"or use store.backend \"sqlite\"")

// ErrLegacyTable is returned by Open for a memory-lancedb table (createdAt,
// no scope or metadata): clawmem reads it with OpenLegacy and copies it
// into a store, but never writes to it.
var ErrLegacyTable = errors.New("the memories table was written by memory-lancedb (createdAt, no scope): " +
	"copy it into a clawmem store with `clawmem migrate` instead of opening it as one")

// Options configure Open.
type Options struct {
	// Dimensions is the configured vector size. Opening a table whose
	// vectors have another size fails with *engine.DimensionError; zero
	// adopts the table's (a new table then needs it).
	Dimensions int
	// Storage configures the object store of an s3:// URI.
	Storage StorageOptions
}

// StorageOptions are the object-store settings of a LanceDB URI such as
// s3://bucket/prefix. Values are used as given: clawmem's config resolves
// ${ENV} references when it loads.
type StorageOptions struct {
	// Endpoint is an S3-compatible endpoint (MinIO, R2, Ceph...); empty
	// means AWS.
	Endpoint string `json:"endpoint"`
	Region   string `json:"region"`
	// AccessKeyID and SecretAccessKey come together; without them the AWS
	// default chain (environment, profile, instance role) applies.
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	SessionToken    string `json:"sessionToken"`
	// AllowHTTP permits a plain-http endpoint (a local MinIO).
	AllowHTTP bool `json:"allowHttp"`
}

// Validate checks the options. An endpoint still written as a ${ENV}
// reference (config show keeps unset ones) is not checked.
func (o StorageOptions) Validate() error {
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return errors.New("accessKeyId and secretAccessKey must be set together")
	}
	if o.SessionToken != "" && o.AccessKeyID == "" {
		return errors.New("sessionToken needs accessKeyId and secretAccessKey")
	}
	if o.Endpoint != "" && !strings.Contains(o.Endpoint, "${") {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint %q: want an http(s) URL such as https://minio.example:9000", o.Endpoint)
		}
		if u.Scheme == "http" && !o.AllowHTTP {
			return fmt.Errorf("endpoint %q is plain http: set allowHttp to use it", o.Endpoint)
		}
	}
	return nil
}

// s3Environment is the part of o that lancedb-go v0.1.2 cannot pass on:
// its connect reads only region and keys from its S3 options, so the
// endpoint reaches LanceDB's object store through the variables the AWS
// S3 client reads from the process environment.
func (o StorageOptions) s3Environment() map[string]string {
	env := map[string]string{}
	if o.Endpoint != "" {
		env["AWS_ENDPOINT"] = o.Endpoint
	}
	if o.AllowHTTP {
		env["AWS_ALLOW_HTTP"] = "true"
	}
	return env
}

// IsURI reports whether dbPath is a URI (s3://, gs://, az://, file://...)
// rather than a local directory: only LanceDB opens one.
func IsURI(dbPath string) bool {
	scheme, _, ok := strings.Cut(dbPath, "://")
	if !ok || scheme == "" {
		return false
	}
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
