package auth

import (
	"io"
	"net/http"
)

// maxDrain bounds what is read of a refused response before its connection is reused.
const maxDrain = 64 << 10

// Replayable reports whether a request can be sent again: it has no body, or GetBody makes it anew.
func Replayable(r *http.Request) bool {
	return r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
}

// Resend sends r once more through base, with header's fields replacing r's, after the refused answer resp is
// drained and closed. If r's body cannot be made anew, resp comes back as it is.
func Resend(base http.RoundTripper, r *http.Request, resp *http.Response, header http.Header) (*http.Response, error) {
	retry := r.Clone(r.Context())
	if r.GetBody != nil {
		var err error
		if retry.Body, err = r.GetBody(); err != nil {
			return resp, nil
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	for k, v := range header {
		retry.Header[k] = v
	}
	return base.RoundTrip(retry)
}
