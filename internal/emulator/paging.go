package emulator

import (
	"encoding/base64"
	"slices"
	"strings"
)

// Listings page by key: a page's token names the last key it returned and
// the next page resumes after that key, so resources created or deleted
// between pages never make another one appear twice or be skipped.

// pageToken is the token of the page after last; tag (e.g. "iam:") tells
// one listing's tokens from another's.
func pageToken(tag, last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tag + last))
}

// pageAfter reads a pageToken of tag: the key the page resumes after;
// false when tok is not such a token.
func pageAfter(tag, tok string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(raw), tag)
}

// resumeAt is the index of the first of keys (sorted) after the key
// after; 0 when after is "".
func resumeAt(keys []string, after string) int {
	if after == "" {
		return 0
	}
	i, found := slices.BinarySearch(keys, after)
	if found {
		i++
	}
	return i
}

// paginate returns the page of keys (sorted) after the key after, at most
// max (at least 1), and the next page's token of tag ("" on the last page).
func paginate(keys []string, after string, max int, tag string) (page []string, next string) {
	i := resumeAt(keys, after)
	end := min(i+max, len(keys))
	if end == len(keys) {
		return keys[i:end], ""
	}
	return keys[i:end], pageToken(tag, keys[end-1])
}
