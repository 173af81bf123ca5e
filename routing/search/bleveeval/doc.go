// Package bleveeval compares github.com/blevesearch/bleve/v2 with package search on the evaluation set.
package bleveeval
