// Command binsize breaks a Go binary's size down by module and by package:
//
//	go run ./hack/binsize -bin BINARY [-release STRIPPED] [-top 30] [-o REPORT.md]
//
// BINARY must keep its symbol table (built without -ldflags -s): the sizes
// are the ELF symbols' of the sections with room in the file (text,
// read-only data, data; not bss), each given to the package its name
// starts with and to the longest module of `go version -m` that holds it. The ELF
// sections' sizes come first: .gopclntab (the runtime's function tables,
// about as large as .text) is in no symbol's size.
package main

import (
	"cmp"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	bin := flag.String("bin", "", "the binary (with its symbol table)")
	release := flag.String("release", "", "the same build stripped (-s -w), whose file size the report gives first")
	top := flag.Int("top", 30, "rows per table")
	out := flag.String("o", "", "write the report here (default: standard output)")
	flag.Parse()
	if err := run(*bin, *release, *top, *out); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(bin, release string, top int, out string) error {
	if bin == "" {
		return fmt.Errorf("-bin: the binary to break down is required")
	}
	var releaseSize int64
	if release != "" {
		st, err := os.Stat(release)
		if err != nil {
			return fmt.Errorf("-release: %w", err)
		}
		releaseSize = st.Size()
	}
	sections, err := sectionSizes(cmp.Or(release, bin)) // what ships
	if err != nil {
		return err
	}
	syms, err := symbols(bin)
	if err != nil {
		return err
	}
	if len(syms) == 0 {
		return fmt.Errorf("%s: no symbols (built with -ldflags -s? binsize needs the symbol table)", bin)
	}
	vm, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return fmt.Errorf("go version -m %s: %w", bin, err)
	}
	mods := modules(string(vm))
	w := io.Writer(os.Stdout)
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	report(w, bin, release, releaseSize, sections, breakdown(syms, mods), top)
	return nil
}

// sectionSizes are the sizes of the ELF sections that take room in the file.
func sectionSizes(bin string) ([]row, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		rows = append(rows, row{name: s.Name, size: int64(s.Size)})
	}
	return sortRows(rows), nil
}

// symbol is a symbol of the ELF symbol table that takes room in the file.
type symbol struct {
	name string
	size int64
}

// symbols are the binary's symbols in sections with room in the file
// (not .bss or .noptrbss, whose symbols take none).
func symbols(bin string) ([]symbol, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := f.Symbols()
	if err != nil && err != elf.ErrNoSymbols {
		return nil, err
	}
	var syms []symbol
	for _, s := range all {
		if s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) || s.Size == 0 {
			continue
		}
		if f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		syms = append(syms, symbol{name: s.Name, size: int64(s.Size)})
	}
	return syms, nil
}

// modules are the module paths of go version -m's output, the main
// module's among them.
func modules(versionM string) []string {
	var mods []string
	for _, line := range strings.Split(versionM, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			mods = append(mods, f[1])
		}
	}
	return mods
}

// Names of what no package's name starts: the runtime's tables of
// functions and types.
const (
	funcData = "(go:func.*: the functions' argument and stack maps)"
	typeData = "(type descriptors, equality and hash functions, itabs)"
)

// packageOf is the import path a symbol's name starts with, or one of the
// groups above.
func packageOf(name string) string {
	switch {
	case strings.HasPrefix(name, "go:func."):
		return funcData
	case strings.HasPrefix(name, "type:"), strings.HasPrefix(name, "go:itab."):
		return typeData
	case strings.HasPrefix(name, "go:"):
		return "(" + strings.SplitN(name, ".", 2)[0] + ")"
	}
	end := len(name)
	if i := strings.IndexAny(name, "(["); i >= 0 {
		end = i
	}
	head := name[:end]
	slash := strings.LastIndex(head, "/")
	last := head[slash+1:]
	dot := strings.Index(last, ".")
	if dot < 0 {
		return head
	}
	if v := gopkgVersion(last[dot+1:]); v > 0 { // gopkg.in/yaml.v3
		dot += 1 + v
	}
	return head[:slash+1+dot]
}

// gopkgVersion is the length of a gopkg.in version ("v3") that starts s
// and is followed by a dot, or 0.
func gopkgVersion(s string) int {
	if len(s) < 3 || s[0] != 'v' {
		return 0
	}
	i := 1
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 1 || i == len(s) || s[i] != '.' {
		return 0
	}
	return i
}

// moduleOf is the longest of mods that holds pkg, "std" for the standard
// library's packages, or pkg itself for the groups of packageOf.
func moduleOf(pkg string, mods []string) string {
	if strings.HasPrefix(pkg, "(") {
		return pkg
	}
	best := ""
	for _, m := range mods {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best != "" {
		return best
	}
	if first, _, _ := strings.Cut(pkg, "/"); !strings.Contains(first, ".") {
		return "std"
	}
	return "(other: " + pkg + ")"
}

// row is a name and its bytes.
type row struct {
	name string
	size int64
}

func sortRows(rows []row) []row {
	slices.SortFunc(rows, func(a, b row) int {
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return rows
}

// sizes is the symbols' bytes by module and by package.
type sizes struct {
	total           int64
	byModule, byPkg []row
	pkgsOf          map[string]int // packages per module
}

func breakdown(syms []symbol, mods []string) sizes {
	mod, pkg := map[string]int64{}, map[string]int64{}
	pkgsOf := map[string]int{}
	var total int64
	for _, s := range syms {
		p := packageOf(s.name)
		if _, seen := pkg[p]; !seen {
			pkgsOf[moduleOf(p, mods)]++
		}
		pkg[p] += s.size
		mod[moduleOf(p, mods)] += s.size
		total += s.size
	}
	toRows := func(m map[string]int64) []row {
		var rows []row
		for k, v := range m {
			rows = append(rows, row{k, v})
		}
		return sortRows(rows)
	}
	return sizes{total: total, byModule: toRows(mod), byPkg: toRows(pkg), pkgsOf: pkgsOf}
}

func report(w io.Writer, bin, release string, releaseSize int64, sections []row, s sizes, top int) {
	var file, program int64 // every section; those a stripped binary keeps
	for _, r := range sections {
		file += r.size
		if r.name == ".text" || r.name == ".rodata" || r.name == ".data" || r.name == ".noptrdata" {
			program += r.size
		}
	}
	mb := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/1e6) }
	pct := func(n, of int64) string { return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of)) }
	fmt.Fprintf(w, "# %s: size by section, module and package (make size)\n\n", filepath.Base(cmp.Or(release, bin)))
	if release != "" {
		fmt.Fprintf(w, "The release binary (%s, stripped): %s MB; its sections:\n\n", filepath.Base(release), mb(releaseSize))
	} else {
		fmt.Fprintf(w, "Sections with room in the file: %s MB in all.\n\n", mb(file))
	}
	fmt.Fprintf(w, "| section | MB | share |\n|---|---|---|\n")
	for _, r := range sections[:min(len(sections), 12)] {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.name, mb(r.size), pct(r.size, file))
	}
	fmt.Fprintf(w, "\nSymbols (text, read-only data, data): %s MB of the %s MB of .text, .rodata, .data and .noptrdata; the rest is data no symbol names (string literals, embedded files). By module, the %d largest:\n\n| module | packages | MB | share of the symbols |\n|---|---|---|---|\n", mb(s.total), mb(program), top)
	for _, r := range s.byModule[:min(len(s.byModule), top)] {
		fmt.Fprintf(w, "| %s | %d | %s | %s |\n", r.name, s.pkgsOf[r.name], mb(r.size), pct(r.size, s.total))
	}
	fmt.Fprintf(w, "\nBy package, the %d largest:\n\n| package | MB | share of the symbols |\n|---|---|---|\n", top)
	for _, r := range s.byPkg[:min(len(s.byPkg), top)] {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.name, mb(r.size), pct(r.size, s.total))
	}
}
