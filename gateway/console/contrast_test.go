package console

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// WCAG AA: normal text needs a contrast ratio of 4.5:1 with its background.
const minContrast = 4.5

// luminance is a colour's relative luminance (WCAG 2.x), from #rrggbb.
func luminance(hex string) (float64, error) {
	if len(hex) != 7 || hex[0] != '#' {
		return 0, fmt.Errorf("colour %q is not #rrggbb", hex)
	}
	var l [3]float64
	for i := range 3 {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			return 0, fmt.Errorf("colour %q: %w", hex, err)
		}
		c := float64(v) / 255
		if c <= 0.04045 {
			l[i] = c / 12.92
		} else {
			l[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2], nil
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(a, b string) (float64, error) {
	la, err := luminance(a)
	if err != nil {
		return 0, err
	}
	lb, err := luminance(b)
	if err != nil {
		return 0, err
	}
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05), nil
}

var (
	cssVar  = regexp.MustCompile(`--([a-z-]+):\s*(#[0-9a-fA-F]{6})\s*;`)
	cssRule = regexp.MustCompile(`([^{}]+)\{([^{}]*)\}`)
	cssDecl = regexp.MustCompile(`(?:^|;)\s*(color|background-color)\s*:\s*([^;]+)`)
)

// TestContrast computes, from the stylesheet itself, the contrast of every
// rule that sets both a text colour and a background, and of each text
// colour on the page's two surfaces (the cards and the page behind them).
func TestContrast(t *testing.T) {
	css, err := files.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range cssVar.FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = strings.ToLower(m[2])
	}
	resolve := func(v string) (string, bool) {
		v = strings.TrimSpace(v)
		if name, ok := strings.CutPrefix(v, "var(--"); ok {
			c, ok := vars[strings.TrimSuffix(name, ")")]
			return c, ok
		}
		return strings.ToLower(v), strings.HasPrefix(v, "#")
	}
	check := func(where, fg, bg string) {
		t.Helper()
		r, err := contrast(fg, bg)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		if r < minContrast {
			t.Errorf("%s: %s on %s is %.2f:1, below %.1f:1", where, fg, bg, r, minContrast)
		}
	}

	rules := 0
	for _, m := range cssRule.FindAllStringSubmatch(string(css), -1) {
		sel := strings.TrimSpace(m[1][strings.LastIndex(m[1], "\n")+1:])
		decl := map[string]string{}
		for _, d := range cssDecl.FindAllStringSubmatch(m[2], -1) {
			decl[d[1]] = d[2]
		}
		fgv, bgv := decl["color"], decl["background-color"]
		if fgv == "" || bgv == "" || bgv == "transparent" {
			continue
		}
		fg, ok1 := resolve(fgv)
		bg, ok2 := resolve(bgv)
		if !ok1 || !ok2 {
			t.Errorf("%s: cannot resolve color %q on %q", sel, fgv, bgv)
			continue
		}
		rules++
		check(sel, fg, bg)
	}
	// The badges, flashes, buttons, banner, diff and markers at least.
	if rules < 15 {
		t.Errorf("only %d rules set both colours: the parser missed some", rules)
	}

	// Text colours set without a background sit on a card or on the page.
	for _, fg := range []string{"fg", "muted", "accent", "bad-fg", "ok-fg", "off-fg"} {
		for _, bg := range []string{"card", "bg", "code-bg"} {
			c, ok1 := vars[fg]
			b, ok2 := vars[bg]
			if !ok1 || !ok2 {
				t.Fatalf("no --%s or --%s in the stylesheet", fg, bg)
			}
			check("--"+fg+" on --"+bg, c, b)
		}
	}
}

func TestContrastFormula(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want float64
	}{
		{"#000000", "#ffffff", 21},
		{"#ffffff", "#ffffff", 1},
		{"#767676", "#ffffff", 4.54},
	} {
		got, err := contrast(tt.a, tt.b)
		if err != nil || math.Abs(got-tt.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, %v; want %.2f", tt.a, tt.b, got, err, tt.want)
		}
	}
}
