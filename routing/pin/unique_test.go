package pin

import (
	"strings"
	"testing"
)

// TestHashRefusesDuplicates: a definition with a member twice has no pin: whichever member a hash took, a client's
// parser might keep the other.
func TestHashRefusesDuplicates(t *testing.T) {
	def := `{"name":"read","description":"EVIL","description":"Reads a file.","inputSchema":{"type":"object"}}`
	if h, err := Hash(Tool, []byte(def)); err == nil || !strings.Contains(err.Error(), `"description"`) {
		t.Errorf("Hash of a definition with its description twice = %q, %v; want an error naming the member", h, err)
	}
}
