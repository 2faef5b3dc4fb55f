package harness

import "strings"

// Redacted replaces a secret argument's value in what RedactArgs returns.
const Redacted = "<redacted>"

// RedactArgs returns a copy of args with the values of secret flags
// replaced by Redacted: a flag whose name says token, secret or password
// (in any case), unless the name ends in "file", "path" or "dir" (it names
// a file, which is not the secret) or the value is true or false (a switch).
// Both --name=value and --name value are handled. The status handler's
// /components and a binary's dry run show arguments through it; Status
// keeps them as given. The rule errs towards hiding: a duration such as
// --service-account-max-token-expiration=48h is hidden too.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !secretFlag(name) {
			continue
		}
		if hasValue {
			if !isSwitch(value) {
				out[i] = a[:len(a)-len(value)] + Redacted
			}
			continue
		}
		if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") && !isSwitch(out[i+1]) {
			out[i+1] = Redacted
			i++
		}
	}
	return out
}

func secretFlag(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "file") || strings.HasSuffix(n, "path") || strings.HasSuffix(n, "dir") {
		return false
	}
	return strings.Contains(n, "token") || strings.Contains(n, "secret") || strings.Contains(n, "password")
}

func isSwitch(v string) bool { return v == "true" || v == "false" }
