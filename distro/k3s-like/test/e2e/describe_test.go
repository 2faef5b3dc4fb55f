package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// describe says what a namespace's Pods are waiting for: each Pod's node,
// phase, conditions and container states, then the namespace's events,
// oldest first. A test that gives up waiting for Pods logs it, so that a
// failure says why and not only that.
func describe(ctx context.Context, c kubernetes.Interface, namespace string) string {
	// The test's own context may be what ran out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var b strings.Builder
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "pods of %s: %v\n", namespace, err)
	} else {
		fmt.Fprintf(&b, "%d pods in %s:\n", len(pods.Items), namespace)
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "  %s node=%q phase=%s", p.Name, p.Spec.NodeName, p.Status.Phase)
			for _, cond := range p.Status.Conditions {
				fmt.Fprintf(&b, " %s=%s", cond.Type, cond.Status)
				if cond.Reason != "" {
					fmt.Fprintf(&b, "(%s: %s)", cond.Reason, cond.Message)
				}
			}
			b.WriteString("\n")
			for _, cs := range p.Status.ContainerStatuses {
				fmt.Fprintf(&b, "    container %s ready=%t restarts=%d %s\n", cs.Name, cs.Ready, cs.RestartCount, containerState(cs.State))
			}
		}
	}
	events, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "events of %s: %v\n", namespace, err)
		return b.String()
	}
	slices.SortFunc(events.Items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	fmt.Fprintf(&b, "%d events in %s:\n", len(events.Items), namespace)
	for _, e := range events.Items {
		fmt.Fprintf(&b, "  %s %s %s/%s %s: %s (x%d)\n", eventTime(e).Format("15:04:05.000"), e.Type,
			strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1))
	}
	return b.String()
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.Format("15:04:05")
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s exit %d %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	}
	return "no state"
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.FirstTimestamp.Time
}
