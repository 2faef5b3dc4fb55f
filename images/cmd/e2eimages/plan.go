package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kubeharness/kubeharness/images/busybox"
)

// A plan is one archive: the names it carries and how it is made, or,
// without a recipe, why those names are not built.
type plan struct {
	// file is the archive's name without .tar.
	file   string
	names  []string
	recipe recipe
	// variant tells a recipe which of its images to make ("prev:NEWEST"
	// for an older agnhost tag).
	variant string
	// note is what IMAGES.txt says of the image: how faithful it is, or
	// why it is not built.
	note string
}

const e2eRepo = "registry.k8s.io/e2e-test-images/"

// never are images that must not exist on the node: the tests expect
// their pulls to fail.
var never = map[string]string{
	"invalid.registry.k8s.io/invalid/alpine":  "never built: tests expect its pull to fail",
	"gcr.io/k8s-authenticated-test/agnhost":   "never built: a private image of a GCE project, for tests that expect a pull without credentials to fail",
	e2eRepo + "agnhost-private-never-present": "never built",
}

// recipes are the images built, by repository, and what they are beside
// upstream's.
var recipes = map[string]struct {
	r    recipe
	note string
}{
	"registry.k8s.io/pause":            {pauseImage, "the project's pause program (images/pause)"},
	e2eRepo + "agnhost":                {agnhostImage, "agnhost from the minor's own source at the tag's version; userland: busybox " + busybox.Version + " (ash as /bin/sh, as Alpine's) and Debian's curl, netcat-openbsd, bind9-dnsutils, getent, bash, socat instead of Alpine's"},
	e2eRepo + "busybox":                {busyboxImage, "busybox " + busybox.Version + " from upstream's source (Debian's orig tarball), configured as upstream's image; static, where upstream's glibc variant is dynamic"},
	e2eRepo + "nginx":                  {nginxImage, "Debian's nginx (1.22) instead of nginx on Alpine; no conformance test sends it a request"},
	e2eRepo + "glibc-dns-testing":      {dnsTestingImage, "Debian bookworm's dash, coreutils, bash, dig and getent, as upstream's (debian:bookworm-slim + dnsutils), without /coredns (no conformance test runs it)"},
	e2eRepo + "kitten":                 {webImage("kitten"), "agnhost (above) with upstream's kitten.jpg and data.json, run as test-webserver; stand-in: /etc/os-release of our own says \"Alpine Linux\", which the ImageVolume test looks for"},
	e2eRepo + "nautilus":               {webImage("nautilus"), "agnhost (above) with upstream's nautilus.jpg and data.json, run as test-webserver"},
	e2eRepo + "nonewprivs":             {nonewprivsImage, "upstream's nnp program from the minor's source, setuid root"},
	e2eRepo + "sample-apiserver":       {sampleAPIServerImage, "k8s.io/sample-apiserver at the minor's version instead of 1.29"},
	"registry.k8s.io/etcd":             {etcdImage, "etcd from the etcd module of the minor's build, as etcd-io's release image (no shell)"},
	e2eRepo + "resource-consumer":      {nil, "not built: no [Conformance] test runs it"},
	e2eRepo + "regression-issue-74839": {nil, "not built: no [Conformance] test runs it"},
}

// makePlans groups names into archives: one per recipe, except that each agnhost
// tag older than the newest is an archive of its own (a stand-in made
// different by a marker file, so that a Pod's status names its own tag).
func makePlans(names []string) ([]plan, error) {
	byFile := map[string]*plan{}
	var order []string
	add := func(file, variant, n, note string, r recipe) {
		p, ok := byFile[file]
		if !ok {
			p = &plan{file: file, variant: variant, recipe: r, note: note}
			byFile[file] = p
			order = append(order, file)
		}
		p.names = append(p.names, n)
	}
	newest := ""
	for _, n := range names {
		if repo, tag := split(n); repo == e2eRepo+"agnhost" && (newest == "" || versionLess(newest, tag)) {
			newest = tag
		}
	}
	for _, n := range names {
		repo, tag := split(n)
		base := repo[strings.LastIndex(repo, "/")+1:]
		if why, ok := never[repo]; ok {
			add("never-"+base, "", n, why, nil)
			continue
		}
		rc, ok := recipes[repo]
		switch {
		case !ok:
			add("unused", "", n, "not built: no [Conformance] test runs it", nil)
		case rc.r == nil:
			add("unused", "", n, rc.note, nil)
		case repo == e2eRepo+"agnhost" && tag != newest:
			add(base+"-"+tag, "prev:"+newest, n, "stand-in: agnhost "+newest+" (above) under an older tag, with a marker file /agnhost-prev so that it is a different image; the tests need a second agnhost that behaves the same", rc.r)
		default:
			add(base, "", n, rc.note, rc.r)
		}
	}
	out := make([]plan, 0, len(order))
	for _, f := range order {
		out = append(out, *byFile[f])
	}
	return out, nil
}

// split is an image name's repository and tag.
func split(n string) (repo, tag string) {
	t, err := name.NewTag(n, name.StrictValidation)
	if err != nil {
		panic(fmt.Sprintf("split %q: %v", n, err)) // readList checked every name
	}
	return t.Context().Name(), t.TagStr()
}

// versionLess compares dotted versions ("2.55" < "2.66.1") field by field,
// numerically where both fields are numbers.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.Atoi(as[i])
		y, erry := strconv.Atoi(bs[i])
		if errx == nil && erry == nil {
			if x != y {
				return x < y
			}
			continue
		}
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}
