package cluster

import (
	"context"
	"crypto"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/rbacapply"
	"github.com/kubeharness/kubeharness/harness"
)

// What a server publishes for agents to join with.
const (
	// NodeJoinName is the harness component that publishes it.
	NodeJoinName = "node-join"
	// bootstrapGroup is the extra group of the bootstrap token.
	bootstrapGroup = "system:bootstrappers:k3s-like:agent"
	// agentSettings is the ConfigMap in kube-system an agent reads with
	// the join credential (JoinUser): the client CA its kubelet trusts,
	// the cluster DNS address and domain, the current bootstrap token's ID;
	// the Role and RoleBinding that let it are named so too.
	agentSettings = "k3s-like-agent"
	// agentBootstrap names the Role and RoleBinding that let every
	// bootstrap token read the agent settings.
	agentBootstrap = "k3s-like-agent-bootstrap"
	// bootstrappers is upstream's group of every bootstrap token.
	bootstrappers = "system:bootstrappers"
	// nodeClientAutoApprove named, in an older release, the binding that
	// made the controller-manager approve any bootstrap token's request
	// for any node's client certificate; publishNodeAccess deletes it.
	nodeClientAutoApprove = "k3s-like-node-client-autoapprove"
	joinManager           = "k3s-like"
	// legacyNodeProxier named, in an older release, the binding of
	// system:node-proxier to every kubelet (kube-proxy used its kubelet's
	// credential); publishNodeAccess deletes it.
	legacyNodeProxier = "k3s-like-node-proxier"
)

// The agent settings' keys.
const (
	settingClientCA      = "client-ca.crt"
	settingClusterDNS    = "cluster-dns"
	settingClusterDomain = "cluster-domain"
	settingClusterCIDR   = "cluster-cidr"
	settingFlannel       = "flannel-backend"
	// settingBootstrapToken is the ID of the bootstrap token agents take.
	settingBootstrapToken = "bootstrap-token-id"
)

// NodeJoin is what a server publishes for agents to join with: the node-join
// component.
type NodeJoin struct {
	Layout          pki.Layout // the server's PKI: its client CA
	AdminKubeconfig string
	// DataDir and NodeName are the server's, and its node's name ("" for
	// a server without a node): the node's name is claimed for its node
	// password (NodePasswordFile) before anything else is published.
	DataDir, NodeName string
	// The agents' settings: the cluster DNS address and domain, the Pods'
	// CIDR, the pod network's backend.
	ClusterDNS, ClusterDomain, ClusterCIDR, FlannelBackend string
}

// How long a bootstrap token lives, and how often node-join publishes
// again (which renews it).
const (
	bootstrapTokenTTL = 24 * time.Hour
	// A new token is made once the newest has less than this left: an
	// agent always gets one valid for hours.
	bootstrapTokenRenewBefore = 12 * time.Hour
	republishEvery            = 10 * time.Minute
)

// Add adds the server's node-join component: once the apiserver is
// ready it deletes an older release's automatic approval of bootstrap
// tokens' node client requests, claims the server's node name for its node
// password (EnsureNodePasswordSecret), then publishes, with server-side
// apply, a random bootstrap token
// with an expiry (kube-system/bootstrap-token-ID, see
// ensureBootstrapToken), the agent settings, which JoinUser (the join
// credential) may read with that token's Secret and every bootstrap token
// may read, what lets a bootstrap token ask for a node client certificate
// (upstream's system:node-bootstrapper; NodeClientApprover alone approves,
// with the node password; the kubelets' own renewals are approved for
// system:nodes; a node's request for its kube-proxy's certificate too),
// and the nodes' access to their feature reports
// (publishReporterAccess). It is ready once published, and publishes
// again every 10 minutes, renewing the token before it expires. It logs
// through its context's logger (klog.FromContext).
func (j NodeJoin) Add(h *harness.Harness) error {
	return addPublisher(h, NodeJoinName, "what agents join with", republishEvery, func(ctx context.Context) error {
		return j.publish(ctx, klog.FromContext(ctx))
	})
}

// publishBurst is node-join's client burst: a whole publication (about 25
// requests, TestPublicationFitsTheBurst) goes without client-side
// throttling; client-go's default burst, 10, made the first start wait
// 200 ms a request after the tenth (its QPS, 5, stays: a publication
// every 10 minutes never empties the bucket).
const publishBurst = 50

// clientConfig is node-join's client configuration: the admin
// kubeconfig's, its user agent, publishBurst.
func (j NodeJoin) clientConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", j.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "k3s-like-node-join"
	cfg.Burst = publishBurst
	return cfg, nil
}

// publish applies the join objects once.
func (j NodeJoin) publish(ctx context.Context, log logr.Logger) error {
	clientCA, err := os.ReadFile(j.Layout.ClientCA().CertFile)
	if err != nil {
		return err
	}
	// The cluster CA signs the agent settings (verifySettings).
	serverCA, err := pki.LoadCA(j.Layout.ServerCA().CertFile, j.Layout.ServerCA().KeyFile)
	if err != nil {
		return err
	}
	cfg, err := j.clientConfig()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The feature publisher may read and update its three CRDs, not
	// create any: they are installed here, as the admin.
	installCRDs := func(ctx context.Context) error { return featurepub.InstallCRDs(ctx, cfg) }
	return j.publishWith(ctx, client, log, string(clientCA), serverCA.Key, installCRDs)
}

// publishWith is publish's requests, through client (installCRDs through
// a client of its own), signed with signer.
func (j NodeJoin) publishWith(ctx context.Context, client kubernetes.Interface, log logr.Logger, clientCA string, signer crypto.Signer, installCRDs func(context.Context) error) error {
	// First: no automatic approval left by an older release, and the
	// server's own name claimed, before any bootstrap token is published.
	if err := client.RbacV1().ClusterRoleBindings().Delete(ctx, nodeClientAutoApprove, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the ClusterRoleBinding %s: %w", nodeClientAutoApprove, err)
	}
	if err := j.claimNodeName(ctx, client); err != nil {
		return err
	}
	// Then what a joining agent needs (its rights, the CRDs of its
	// reports), and last the token and settings it joins with: an agent
	// that starts with the server must not join before it may ask for its
	// certificate (it would be refused, and exit).
	if err := installCRDs(ctx); err != nil {
		return err
	}
	if err := publishNodeAccess(ctx, client); err != nil {
		return err
	}
	return j.publishJoin(ctx, client, time.Now(), log, clientCA, signer)
}

// claimNodeName claims the server's node name for its node password
// (EnsureNodePasswordSecret), so that a stolen agent or bootstrap token
// cannot get a client certificate in its name.
func (j NodeJoin) claimNodeName(ctx context.Context, client kubernetes.Interface) error {
	if j.NodeName == "" {
		return nil
	}
	password, err := EnsureNodePassword(j.DataDir)
	if err != nil {
		return err
	}
	pub, err := NodePasswordPublicKey(password)
	if err != nil {
		return err
	}
	return EnsureNodePasswordSecret(ctx, client, j.NodeName, pub)
}

// publishJoin makes sure of a bootstrap token valid for hours, then lets
// JoinUser read it and the agent settings, which name it: the Role
// first, so that an agent that reads the settings may read the token. The
// settings are signed with signer, the cluster CA's key (verifySettings).
func (j NodeJoin) publishJoin(ctx context.Context, client kubernetes.Interface, now time.Time, log logr.Logger, clientCA string, signer crypto.Signer) error {
	opts := metav1.ApplyOptions{FieldManager: joinManager, Force: true}
	const ns = metav1.NamespaceSystem
	valid, current, err := ensureBootstrapToken(ctx, client, now, log)
	if err != nil {
		return err
	}
	names := make([]string, len(valid))
	for i, id := range valid {
		names[i] = bootstrapSecretPrefix + id
	}
	rbac := client.RbacV1()
	if _, err := rbac.Roles(ns).Apply(ctx, rbacv1ac.Role(agentSettings, ns).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithResourceNames(agentSettings).WithVerbs("get"),
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").WithResourceNames(names...).WithVerbs("get")), opts); err != nil {
		return err
	}
	// The join credential's user only: a bootstrap token (an older
	// release bound the token's group here) does not read the bootstrap
	// tokens, or a short-lived one would get the long-lived ones.
	if _, err := rbac.RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(agentSettings, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(agentSettings)).
		WithSubjects(rbacv1ac.Subject().WithKind("User").WithAPIGroup("rbac.authorization.k8s.io").WithName(JoinUser)), opts); err != nil {
		return err
	}
	// Every bootstrap token reads the settings (an agent that joins with
	// one made by k3s-like token create).
	if _, err := rbac.Roles(ns).Apply(ctx, rbacv1ac.Role(agentBootstrap, ns).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithResourceNames(agentSettings).WithVerbs("get")), opts); err != nil {
		return err
	}
	if _, err := rbac.RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(agentBootstrap, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(agentBootstrap)).
		WithSubjects(rbacv1ac.Subject().WithKind("Group").WithAPIGroup("rbac.authorization.k8s.io").WithName(bootstrappers)), opts); err != nil {
		return err
	}
	data := map[string]string{
		settingClientCA:       clientCA,
		settingClusterDNS:     j.ClusterDNS,
		settingClusterDomain:  j.ClusterDomain,
		settingClusterCIDR:    j.ClusterCIDR,
		settingFlannel:        j.FlannelBackend,
		settingBootstrapToken: current,
	}
	if data[settingSignature], err = signSettings(signer, data); err != nil {
		return err
	}
	_, err = client.CoreV1().ConfigMaps(ns).Apply(ctx, corev1ac.ConfigMap(agentSettings, ns).WithData(data), opts)
	return err
}

// bootstrapSecretPrefix starts a bootstrap token Secret's name; its token
// ID ends it.
const bootstrapSecretPrefix = "bootstrap-token-"

// ensureBootstrapToken keeps the cluster's bootstrap tokens (type
// bootstrap.kubernetes.io/token in kube-system, auth-extra-groups
// bootstrapGroup): it deletes those expired and those with no expiry
// (which an older release derived from the cluster token), and makes a
// random one valid for bootstrapTokenTTL when none has
// bootstrapTokenRenewBefore left. valid are the IDs of those left,
// sorted; current is the one that expires last. Servers that renew at
// once leave a token each, both valid until they expire.
func ensureBootstrapToken(ctx context.Context, client kubernetes.Interface, now time.Time, log logr.Logger) (valid []string, current string, err error) {
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeBootstrapToken)})
	if err != nil {
		return nil, "", err
	}
	var last time.Time
	for _, s := range list.Items {
		if s.Type != corev1.SecretTypeBootstrapToken || string(s.Data["auth-extra-groups"]) != bootstrapGroup {
			continue
		}
		id := string(s.Data["token-id"])
		exp, perr := time.Parse(time.RFC3339, string(s.Data["expiration"]))
		var why string
		switch {
		case len(s.Data["expiration"]) == 0:
			why = "it has no expiry (an older release derived it from the cluster token)"
		case perr != nil:
			why = "its expiration is not RFC 3339"
		case !exp.After(now):
			why = "it expired"
		case s.Name != bootstrapSecretPrefix+id:
			why = "its name is not bootstrap-token-<token-id>"
		}
		if why != "" {
			if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(s.UID))}); err != nil && !apierrors.IsNotFound(err) {
				return nil, "", fmt.Errorf("deleting the bootstrap token kube-system/%s (%s): %w", s.Name, why, err)
			}
			log.Info("Deleted a bootstrap token of agents", "secret", s.Name, "reason", why)
			continue
		}
		valid = append(valid, id)
		if exp.After(last) || (exp.Equal(last) && id > current) {
			last, current = exp, id
		}
	}
	if current == "" || last.Sub(now) < bootstrapTokenRenewBefore {
		id, secret, err := newBootstrapToken()
		if err != nil {
			return nil, "", err
		}
		exp := now.Add(bootstrapTokenTTL).UTC().Format(time.RFC3339)
		if _, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: bootstrapSecretPrefix + id, Namespace: metav1.NamespaceSystem},
			Type:       corev1.SecretTypeBootstrapToken,
			Data: map[string][]byte{
				"description":                    []byte("k3s-like agents' kubelets bootstrap with it (random; the server renews it before it expires)"),
				"token-id":                       []byte(id),
				"token-secret":                   []byte(secret),
				"expiration":                     []byte(exp),
				"usage-bootstrap-authentication": []byte("true"),
				"auth-extra-groups":              []byte(bootstrapGroup),
			},
		}, metav1.CreateOptions{FieldManager: joinManager}); err != nil {
			return nil, "", fmt.Errorf("creating a bootstrap token for agents: %w", err)
		}
		log.Info("Made a bootstrap token for agents", "secret", bootstrapSecretPrefix+id, "expiration", exp)
		valid, current = append(valid, id), id
	}
	sort.Strings(valid)
	return valid, current, nil
}

// publishNodeAccess applies what nodes and the server's own clients are
// allowed: bootstrap tokens' certificate requests (approved by
// NodeClientApprover only), renewals,
// kube-proxy, the kubelets' API, the serving approver, the feature
// publisher, flannel and the feature reporters.
func publishNodeAccess(ctx context.Context, client kubernetes.Interface) error {
	opts := metav1.ApplyOptions{FieldManager: joinManager, Force: true}
	rbac := client.RbacV1()
	// A bootstrap token's request for a node's client certificate is
	// approved by the node-client approver alone, with the node password
	// (NodeClientApprover), never by the controller-manager.
	// Each node's kube-proxy has its own identity (pki.KubeProxyUser,
	// bound by upstream's system:node-proxier ClusterRoleBinding): the
	// kubelets no longer get its role.
	for _, name := range []string{nodeClientAutoApprove, legacyNodeProxier} {
		if err := rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the ClusterRoleBinding %s: %w", name, err)
		}
	}
	for name, binding := range map[string][2]string{
		"k3s-like-node-bootstrapper":         {"system:node-bootstrapper", bootstrappers},
		"k3s-like-node-client-renew-approve": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
		// The apiserver's kubelet client: the kubelets' API (exec, logs,
		// port-forward, proxy), not system:masters.
		"kubeharness:kubelet-api-admin": {"system:kubelet-api-admin", pki.KubeletAPIAdminGroup},
	} {
		subject := rbacv1ac.Subject().WithKind("Group").WithAPIGroup("rbac.authorization.k8s.io").WithName(binding[1])
		if _, err := rbac.ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(name).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(binding[0])).
			WithSubjects(subject), opts); err != nil {
			return err
		}
	}
	// The serving certificate approver: read Nodes and requests, approve
	// for the kubelet-serving signer only.
	if err := rbacapply.ClusterRole(ctx, client, opts, kubeletServingApprover, approvers.ServingApproverRules(), "User", pki.KubeletServingApproverUser); err != nil {
		return err
	}
	if err := rbacapply.FeaturePublisherAccess(ctx, client, opts); err != nil {
		return err
	}
	// Each node's flannel uses its kubelet's credential.
	if err := rbacapply.ClusterRole(ctx, client, opts, flannelRole, flannel.Rules(), "Group", "system:nodes"); err != nil {
		return err
	}
	return publishReporterAccess(ctx, client, opts)
}

// kubeletServingApprover names the ClusterRole and binding of the
// approver of kubelet serving certificates (approvers.ServingApprover).
const kubeletServingApprover = "kubeharness:kubelet-serving-approver"

// flannelRole names the ClusterRole and binding of the nodes' flannel
// (flannel.Rules).
const flannelRole = "kubeharness:flannel"

// nodeReporter names the ClusterRole, its binding and the admission policy
// that let each node's feature reporter write its own NodeFeatureReport.
const nodeReporter = "k3s-like-node-feature-reporter"

// publishReporterAccess lets the nodes (system:nodes, their kubelets'
// credentials) read and create FeatureProfiles and read, create and
// update NodeFeatureReports, and, by a ValidatingAdmissionPolicy, a node
// only the report named after itself. The policy and its binding are
// applied first: a node never has the rights without the limit.
func publishReporterAccess(ctx context.Context, client kubernetes.Interface, opts metav1.ApplyOptions) error {
	rbac := client.RbacV1()
	group := featuresv1alpha1.GroupName
	adm := client.AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Apply(ctx, admissionv1ac.ValidatingAdmissionPolicy(nodeReporter).WithSpec(
		admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionregistrationv1.Fail).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(admissionv1ac.NamedRuleWithOperations().
				WithAPIGroups(group).WithAPIVersions("*").WithResources(featuresv1alpha1.NodeFeatureReportResource.Resource).
				WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete))).
			WithMatchConditions(admissionv1ac.MatchCondition().WithName("a-node").
				WithExpression(`request.userInfo.username.startsWith("system:node:")`)).
			WithValidations(admissionv1ac.Validation().
				WithExpression(`request.userInfo.username == "system:node:" + request.name`).
				WithMessageExpression(`request.userInfo.username + " may write only its own NodeFeatureReport, not " + request.name`).
				WithReason(metav1.StatusReasonForbidden))), opts); err != nil {
		return err
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Apply(ctx, admissionv1ac.ValidatingAdmissionPolicyBinding(nodeReporter).WithSpec(
		admissionv1ac.ValidatingAdmissionPolicyBindingSpec().WithPolicyName(nodeReporter).
			WithValidationActions(admissionregistrationv1.Deny)), opts); err != nil {
		return err
	}
	if _, err := rbac.ClusterRoles().Apply(ctx, rbacv1ac.ClusterRole(nodeReporter).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(featuresv1alpha1.FeatureProfileResource.Resource).WithVerbs("get", "create"),
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(featuresv1alpha1.NodeFeatureReportResource.Resource).WithVerbs("get", "create", "update"),
	), opts); err != nil {
		return err
	}
	_, err := rbac.ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(nodeReporter).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(nodeReporter)).
		WithSubjects(rbacv1ac.Subject().WithKind("Group").WithAPIGroup("rbac.authorization.k8s.io").WithName("system:nodes")), opts)
	return err
}
