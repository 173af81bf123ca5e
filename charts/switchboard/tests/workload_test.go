package charttest

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestWorkloadIdentity: workloadIdentity.enabled mounts a projected service-account token for the audience at
// path (the tokenFile of a type: workload-identity upstream), read-only; without an audience the chart refuses,
// and off it mounts nothing.
func TestWorkloadIdentity(t *testing.T) {
	out, err := helmTemplate(t, "--set", issuer, "--set", "workloadIdentity.enabled=true",
		"--set", "workloadIdentity.audience=https://auth.crm.example", "--set", "workloadIdentity.path=/var/run/wi/sa-token")
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	strictDecode(t, parseRendered(t, out).one(t, "Deployment", fullname).YAML, &dep)
	spec := dep.Spec.Template.Spec
	var found bool
	for _, v := range spec.Volumes {
		if v.Name != "workload-identity" {
			continue
		}
		found = true
		if v.Projected == nil || len(v.Projected.Sources) != 1 || v.Projected.Sources[0].ServiceAccountToken == nil {
			t.Fatalf("workload-identity volume %+v: want one projected service-account token", v)
		}
		sat := v.Projected.Sources[0].ServiceAccountToken
		if sat.Audience != "https://auth.crm.example" || sat.Path != "sa-token" || sat.ExpirationSeconds == nil || *sat.ExpirationSeconds != 3600 {
			t.Errorf("service-account token %+v", sat)
		}
	}
	if !found {
		t.Fatal("no workload-identity volume")
	}
	var mounted bool
	for _, m := range spec.Containers[0].VolumeMounts {
		if m.Name == "workload-identity" {
			mounted = m.MountPath == "/var/run/wi" && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("mounts %+v: want workload-identity read-only at /var/run/wi", spec.Containers[0].VolumeMounts)
	}

	if _, err := helmTemplate(t, "--set", issuer, "--set", "workloadIdentity.enabled=true"); err == nil ||
		!strings.Contains(err.Error(), "workloadIdentity.audience") {
		t.Errorf("enabled without an audience: %v; want the chart to ask for workloadIdentity.audience", err)
	}
	out, err = helmTemplate(t, "--set", issuer)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "workload-identity") {
		t.Error("the default values mount a workload token")
	}
}
