module github.com/switchboard-mcp/switchboard

go 1.26.8

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
