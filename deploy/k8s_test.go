package deploy_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"

	"github.com/clawmem/clawmem/internal/natsconf"
)

type k8sDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas    *int           `yaml:"replicas"`
		ServiceName string         `yaml:"serviceName"`
		ClusterIP   string         `yaml:"clusterIP"`
		Selector    map[string]any `yaml:"selector"`
		Template    struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
	Data      map[string]string `yaml:"data"`
	Resources []string          `yaml:"resources"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports          []containerPort `yaml:"ports"`
	VolumeMounts   []volumeMount   `yaml:"volumeMounts"`
	ReadinessProbe any             `yaml:"readinessProbe"`
}

type containerPort struct {
	ContainerPort int `yaml:"containerPort"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func loadK8s(t *testing.T) (docs map[string]k8sDoc, files map[string]bool) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, files = map[string]k8sDoc{}, map[string]bool{}
	for _, p := range paths {
		files[filepath.Base(p)] = true
		dec := yaml.NewDecoder(strings.NewReader(readFile(t, p)))
		for i := 0; ; i++ {
			var node yaml.Node
			err := dec.Decode(&node)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", p, i, err)
			}
			checkYAMLSecrets(t, p, &node)
			var d k8sDoc
			if err := node.Decode(&d); err != nil {
				t.Fatalf("%s document %d: %v", p, i, err)
			}
			if d.APIVersion == "" || d.Kind == "" {
				t.Errorf("%s document %d: no apiVersion or kind", p, i)
			}
			if d.Kind == "Secret" {
				t.Errorf("%s: a Secret is committed; create it with kubectl instead", p)
			}
			name := d.Metadata.Name
			if d.Kind == "Kustomization" {
				name = "kustomization"
			} else if name == "" {
				t.Errorf("%s document %d (%s): no metadata.name", p, i, d.Kind)
			}
			key := d.Kind + "/" + name
			if _, dup := docs[key]; dup {
				t.Errorf("%s: %s defined twice", p, key)
			}
			docs[key] = d
		}
	}
	return docs, files
}

func TestK8sManifests(t *testing.T) {
	docs, files := loadK8s(t)
	need := func(key string) k8sDoc {
		t.Helper()
		d, ok := docs[key]
		if !ok {
			t.Fatalf("deploy/k8s: no %s (have %v)", key, mapKeys(docs))
		}
		return d
	}

	k := need("Kustomization/kustomization")
	listed := map[string]bool{"kustomization.yaml": true}
	for _, r := range k.Resources {
		listed[r] = true
		if !files[r] {
			t.Errorf("kustomization lists %s, which does not exist", r)
		}
	}
	for f := range files {
		if !listed[f] {
			t.Errorf("%s is not in kustomization.yaml's resources", f)
		}
	}

	cm := need("ConfigMap/clawmem-config")
	cfgs := map[string]jsonConfig{}
	for key, raw := range cm.Data {
		if strings.HasSuffix(key, ".json") {
			cfgs[key] = parseConfig(t, "ConfigMap clawmem-config "+key, []byte(raw))
		}
	}
	checkSameEmbedding(t, "ConfigMap clawmem-config", cfgs)

	workload := func(d k8sDoc, role string) container {
		t.Helper()
		where := d.Kind + "/" + d.Metadata.Name
		match, _ := d.Spec.Selector["matchLabels"].(map[string]any)
		if len(match) == 0 {
			t.Errorf("%s: no selector.matchLabels", where)
		}
		for k, v := range match {
			if d.Spec.Template.Metadata.Labels[k] != fmt.Sprint(v) {
				t.Errorf("%s: selector %s=%v does not match the pod labels", where, k, v)
			}
		}
		ps := d.Spec.Template.Spec
		if ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: want runAsNonRoot", where)
		}
		if u := ps.SecurityContext.RunAsUser; u == nil || fmt.Sprint(*u) != runtimeUID {
			t.Errorf("%s: want runAsUser %s (the image's user)", where, runtimeUID)
		}
		if len(ps.Containers) != 1 {
			t.Fatalf("%s: want one container", where)
		}
		c := ps.Containers[0]
		if got := checkWorkerArgs(t, where, c.Args); got != role {
			t.Errorf("%s runs role %q, want %q", where, got, role)
		}
		if v, _ := c.env("CLAWMEM_DATA_DIR"); v != dataDir {
			t.Errorf("%s: CLAWMEM_DATA_DIR %q, want %s", where, v, dataDir)
		}
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m.Name
		}
		if mounts[dataDir] == "" {
			t.Errorf("%s: nothing mounted at %s", where, dataDir)
		}
		conf, ok := flagValue(c.Args, "--config")
		if !ok {
			t.Fatalf("%s: no --config", where)
		}
		vol := mounts[path.Dir(conf)]
		okCM := false
		for _, v := range ps.Volumes {
			if v.Name == vol && v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
				okCM = true
			}
		}
		if !okCM {
			t.Errorf("%s: --config %s is not in a mount of ConfigMap %s", where, conf, cm.Metadata.Name)
		}
		if _, ok := cfgs[path.Base(conf)]; !ok {
			t.Errorf("%s: ConfigMap has no %s", where, path.Base(conf))
		}
		return c
	}

	store := need("StatefulSet/clawmem-store")
	workload(store, "store")
	if store.Spec.Replicas == nil || *store.Spec.Replicas < 2 {
		t.Error("StatefulSet clawmem-store: want 2 or more writers (they share the partitions; one takes over a dead one's)")
	}
	if len(store.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet clawmem-store: no volumeClaimTemplates")
	} else if c := store.Spec.Template.Spec.Containers[0]; !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool {
		return m.MountPath == dataDir && m.Name == store.Spec.VolumeClaimTemplates[0].Metadata.Name
	}) {
		t.Errorf("StatefulSet clawmem-store: the claim is not mounted at %s", dataDir)
	}
	if hs := need("Service/" + store.Spec.ServiceName); hs.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want headless (clusterIP: None)", store.Spec.ServiceName)
	}

	workload(need("Deployment/clawmem-capture"), "capture")
	if q := need("Deployment/clawmem-query"); q.Spec.Replicas == nil || *q.Spec.Replicas < 2 {
		t.Error("Deployment clawmem-query: want 2 or more query replicas")
	} else {
		workload(q, "query")
	}
	for key, cfg := range cfgs {
		if r, _ := cfg["nats.replicas"].(float64); r != 3 {
			t.Errorf("ConfigMap clawmem-config %s: nats.replicas %v, want 3 (the NATS StatefulSet's nodes)", key, cfg["nats.replicas"])
		}
	}
	checkK8sNATS(t, need)

	ingest := need("Deployment/clawmem-ingest")
	c := workload(ingest, "ingest")
	conf, _ := flagValue(c.Args, "--config")
	icfg := cfgs[path.Base(conf)]
	token, _ := icfg.str("ingest.token")
	ev := envRefName(token)
	if ev == "" {
		t.Fatalf("ingest config token %q: want a ${VAR} reference", token)
	}
	found := false
	for _, e := range c.Env {
		if e.Name == ev {
			found = true
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("ingest: %s must come from a Secret (valueFrom.secretKeyRef)", ev)
			}
		}
	}
	if !found {
		t.Errorf("ingest: the config reads $%s but the container does not set it", ev)
	}
	if !slices.ContainsFunc(c.Ports, func(p containerPort) bool {
		return fmt.Sprint(p.ContainerPort) == ingestPort
	}) {
		t.Errorf("ingest: container port %s not declared", ingestPort)
	}
	if c.ReadinessProbe == nil {
		t.Error("ingest: no readinessProbe")
	}
	svc := need("Service/clawmem-ingest")
	for k, v := range svc.Spec.Selector {
		if ingest.Spec.Template.Metadata.Labels[k] != fmt.Sprint(v) {
			t.Errorf("Service clawmem-ingest selector %s=%v does not select the ingest pods", k, v)
		}
	}
	if len(svc.Spec.Ports) == 0 || fmt.Sprint(svc.Spec.Ports[0].Port) != ingestPort {
		t.Errorf("Service clawmem-ingest: want port %s", ingestPort)
	}
}

// checkK8sNATS checks the NATS StatefulSet: three nodes started together,
// routes to each pod through the headless Service, the client Service
// clawmem's configs name, and a server config like `clawmem nats config
// --cluster 3 --open`'s but for the pods' names.
func checkK8sNATS(t *testing.T, need func(string) k8sDoc) {
	t.Helper()
	sts := need("StatefulSet/nats")
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Error("StatefulSet nats: want 3 nodes")
	}
	if hs := need("Service/" + sts.Spec.ServiceName); hs.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want headless for the routes", sts.Spec.ServiceName)
	}
	if svc := need("Service/" + natsService); len(svc.Spec.Ports) == 0 || fmt.Sprint(svc.Spec.Ports[0].Port) != natsPort {
		t.Errorf("Service %s: want port %s", natsService, natsPort)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet nats: no volumeClaimTemplates for JetStream")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(need("ConfigMap/nats-config").Data["nats.conf"]), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "nats-1")
	got, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats.conf: %v", err)
	}
	gen, err := natsconf.Generate(natsconf.Options{Cluster: 3, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := server.ProcessConfigFile(filepath.Join("nats", "cluster", gen[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	if got.ServerName != "nats-1" {
		t.Errorf("nats.conf server_name %q: want the pod's name", got.ServerName)
	}
	if got.JetStream != want.JetStream || got.StoreDir != want.StoreDir || got.JetStreamMaxStore != want.JetStreamMaxStore ||
		got.JetStreamMaxMemory != want.JetStreamMaxMemory || got.MaxPayload != want.MaxPayload || got.LameDuckDuration != want.LameDuckDuration ||
		got.Cluster.Name != want.Cluster.Name || got.Cluster.Port != want.Cluster.Port || got.Port != want.Port {
		t.Errorf("nats.conf differs from `clawmem nats config --cluster 3 --open`'s node file in more than names")
	}
	var routes []string
	for _, r := range got.Routes {
		routes = append(routes, r.Host)
	}
	for i := range 3 {
		if host := fmt.Sprintf("nats-%d.%s:6222", i, sts.Spec.ServiceName); !slices.Contains(routes, host) {
			t.Errorf("nats.conf routes %v: none to %s", routes, host)
		}
	}
}
