package cluster

import (
	"context"
	"fmt"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
)

// What a server publishes for agents to join with.
const (
	// NodeJoinName is the harness component that publishes it.
	NodeJoinName = "node-join"
	// bootstrapGroup is the extra group of the bootstrap token.
	bootstrapGroup = "system:bootstrappers:k3s-like:agent"
	// agentSettings is the ConfigMap in kube-system an agent reads with
	// the bootstrap token: the client CA its kubelet trusts, the cluster
	// DNS address and domain.
	agentSettings = "k3s-like-agent"
	joinManager   = "k3s-like"
)

// The agent settings' keys.
const (
	settingClientCA      = "client-ca.crt"
	settingClusterDNS    = "cluster-dns"
	settingClusterDomain = "cluster-domain"
	settingClusterCIDR   = "cluster-cidr"
	settingFlannel       = "flannel-backend"
)

// NodeJoin is what a server publishes for agents to join with: the node-join
// component.
type NodeJoin struct {
	DataDir         string     // the server's: its token file
	Layout          pki.Layout // the server's PKI: its client CA
	AdminKubeconfig string
	// The agents' settings: the cluster DNS address and domain, the Pods'
	// CIDR, the pod network's backend.
	ClusterDNS, ClusterDomain, ClusterCIDR, FlannelBackend string
}

// Add adds the server's node-join component: once the apiserver is
// ready it publishes, with server-side apply, the bootstrap token derived
// from the cluster token (kube-system/bootstrap-token-ID), the agent
// settings and what lets a bootstrapping kubelet get a node client
// certificate approved (upstream's ClusterRoles, bound to the token's group;
// the kubelets' own renewals to system:nodes), and upstream's
// system:node-proxier role bound to system:nodes, for the nodes' kube-proxy,
// which uses its kubelet's credential, and the nodes' access to their
// feature reports (publishReporterAccess). It is ready once published. It
// logs through its context's logger (klog.FromContext).
func (j NodeJoin) Add(h *harness.Harness) error {
	return addPublisher(h, NodeJoinName, "what agents join with", j.publish)
}

// publish applies the join objects once.
func (j NodeJoin) publish(ctx context.Context) error {
	b, err := os.ReadFile(TokenFile(j.DataDir))
	if err != nil {
		return err
	}
	tok, err := ParseToken(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", TokenFile(j.DataDir), err)
	}
	clientCA, err := os.ReadFile(j.Layout.ClientCA().CertFile)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", j.AdminKubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "k3s-like-node-join"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: joinManager, Force: true}
	const ns = metav1.NamespaceSystem
	id, secret := tok.BootstrapToken()
	if _, err := client.CoreV1().Secrets(ns).Apply(ctx, corev1ac.Secret("bootstrap-token-"+id, ns).
		WithType(corev1.SecretTypeBootstrapToken).
		WithData(map[string][]byte{
			"description":                    []byte("k3s-like agents join with it (derived from the cluster token)"),
			"token-id":                       []byte(id),
			"token-secret":                   []byte(secret),
			"usage-bootstrap-authentication": []byte("true"),
			"auth-extra-groups":              []byte(bootstrapGroup),
		}), opts); err != nil {
		return err
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Apply(ctx, corev1ac.ConfigMap(agentSettings, ns).WithData(map[string]string{
		settingClientCA:      string(clientCA),
		settingClusterDNS:    j.ClusterDNS,
		settingClusterDomain: j.ClusterDomain,
		settingClusterCIDR:   j.ClusterCIDR,
		settingFlannel:       j.FlannelBackend,
	}), opts); err != nil {
		return err
	}
	rbac := client.RbacV1()
	if _, err := rbac.Roles(ns).Apply(ctx, rbacv1ac.Role(agentSettings, ns).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithResourceNames(agentSettings).WithVerbs("get")), opts); err != nil {
		return err
	}
	group := rbacv1ac.Subject().WithKind("Group").WithAPIGroup("rbac.authorization.k8s.io")
	if _, err := rbac.RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(agentSettings, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(agentSettings)).
		WithSubjects(group.WithName(bootstrapGroup)), opts); err != nil {
		return err
	}
	for name, binding := range map[string][2]string{
		"k3s-like-node-bootstrapper":         {"system:node-bootstrapper", bootstrapGroup},
		"k3s-like-node-client-autoapprove":   {"system:certificates.k8s.io:certificatesigningrequests:nodeclient", bootstrapGroup},
		"k3s-like-node-client-renew-approve": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
		// Each node's kube-proxy uses its kubelet's credential.
		"k3s-like-node-proxier": {"system:node-proxier", "system:nodes"},
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
	if err := publishClusterRole(ctx, client, opts, kubeletServingApprover, approvers.ServingApproverRules(), "User", pki.KubeletServingApproverUser); err != nil {
		return err
	}
	if err := publishClusterRole(ctx, client, opts, featurePublisher, featurepub.ServerRules(), "User", pki.FeaturePublisherUser); err != nil {
		return err
	}
	// Each node's flannel uses its kubelet's credential.
	if err := publishClusterRole(ctx, client, opts, flannelRole, flannel.Rules(), "Group", "system:nodes"); err != nil {
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

// featurePublisher names the ClusterRole and binding of the servers'
// feature publisher and summarizer (featurepub.ServerRules).
const featurePublisher = "kubeharness:feature-publisher"

// publishClusterRole applies the ClusterRole name with rules and binds it
// to the subject of kind (User or Group) subject.
func publishClusterRole(ctx context.Context, client kubernetes.Interface, opts metav1.ApplyOptions, name string, rules []rbacv1.PolicyRule, kind, subject string) error {
	role := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		role.WithRules(rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).WithVerbs(r.Verbs...).WithNonResourceURLs(r.NonResourceURLs...))
	}
	if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
		return err
	}
	_, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(name).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(name)).
		WithSubjects(rbacv1ac.Subject().WithKind(kind).WithAPIGroup("rbac.authorization.k8s.io").WithName(subject)), opts)
	return err
}

// nodeReporter names the ClusterRole, its binding and the admission policy
// that let each node's feature reporter write its own NodeFeatureReport.
const nodeReporter = "k3s-like-node-feature-reporter"

// publishReporterAccess lets the nodes (system:nodes, their kubelets'
// credentials) read and create FeatureProfiles and read, create and
// update NodeFeatureReports, and, by a ValidatingAdmissionPolicy, a node
// only the report named after itself.
func publishReporterAccess(ctx context.Context, client kubernetes.Interface, opts metav1.ApplyOptions) error {
	rbac := client.RbacV1()
	group := featuresv1alpha1.GroupName
	if _, err := rbac.ClusterRoles().Apply(ctx, rbacv1ac.ClusterRole(nodeReporter).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(featuresv1alpha1.FeatureProfileResource.Resource).WithVerbs("get", "create"),
		rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(featuresv1alpha1.NodeFeatureReportResource.Resource).WithVerbs("get", "create", "update"),
	), opts); err != nil {
		return err
	}
	if _, err := rbac.ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(nodeReporter).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(nodeReporter)).
		WithSubjects(rbacv1ac.Subject().WithKind("Group").WithAPIGroup("rbac.authorization.k8s.io").WithName("system:nodes")), opts); err != nil {
		return err
	}
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
	_, err := adm.ValidatingAdmissionPolicyBindings().Apply(ctx, admissionv1ac.ValidatingAdmissionPolicyBinding(nodeReporter).WithSpec(
		admissionv1ac.ValidatingAdmissionPolicyBindingSpec().WithPolicyName(nodeReporter).
			WithValidationActions(admissionregistrationv1.Deny)), opts)
	return err
}
