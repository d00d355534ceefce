package toolsearch

import (
	"slices"
	"testing"
)

func TestAppendTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"createPullRequest", []string{"creat", "pull", "request"}},
		{"HTTPServer", []string{"http", "server"}},
		{"mcp_github_create_issue", []string{"mcp", "github", "creat", "issu"}},
		{"get-library-docs", []string{"get", "library", "doc"}},
		{"List the open issues of my repo", []string{"list", "open", "issu", "repo"}},
		{"context7CompatibleLibraryID", []string{"context", "7", "compatibl", "library", "id"}},
		{"upload to S3 or EC2", []string{"upload", "3", "s3", "ec", "2", "ec2"}},
		{"queries, branches, stopped, running, deployments", []string{"query", "branch", "stop", "run", "deploy"}},
		{"installed processes", []string{"install", "process"}},
		{"connection created", []string{"connect", "creat"}},
		{"", nil},
	} {
		got := appendTerms(nil, tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("appendTerms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStemJoinsForms(t *testing.T) {
	for _, group := range [][]string{
		{"create", "creates", "created", "creating"},
		{"issue", "issues"},
		{"query", "queries", "queried"},
		{"merge", "merged", "merging", "merges"},
		{"stop", "stopped", "stopping", "stops"},
		{"branch", "branches"},
		{"deploy", "deployment", "deployments", "deployed"},
		{"connect", "connection", "connections"},
	} {
		for _, w := range group[1:] {
			if stem(w) != stem(group[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q", w, stem(w), group[0], stem(group[0]))
			}
		}
	}
	for _, w := range []string{"status", "analysis", "string", "aws", "need"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}
