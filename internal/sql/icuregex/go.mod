module github.com/dolthub/go-icu-regex

go 1.22
