package protocol

// Method names, as the schema spells them.
const (
	MethodInitialize     = "initialize"
	MethodPing           = "ping"
	MethodServerDiscover = "server/discover"

	MethodToolsList             = "tools/list"
	MethodToolsCall             = "tools/call"
	MethodPromptsList           = "prompts/list"
	MethodPromptsGet            = "prompts/get"
	MethodResourcesList         = "resources/list"
	MethodResourceTemplatesList = "resources/templates/list"
	MethodResourcesRead         = "resources/read"
	MethodResourcesSubscribe    = "resources/subscribe"
	MethodResourcesUnsubscribe  = "resources/unsubscribe"
	MethodCompletionComplete    = "completion/complete"
	MethodLoggingSetLevel       = "logging/setLevel"
	MethodSubscriptionsListen   = "subscriptions/listen"
	MethodTasksGet              = "tasks/get"
	MethodTasksResult           = "tasks/result"
	MethodTasksList             = "tasks/list"
	MethodTasksCancel           = "tasks/cancel"
	MethodRootsList             = "roots/list"
	MethodSamplingCreateMessage = "sampling/createMessage"
	MethodElicitationCreate     = "elicitation/create"

	NotificationInitialized               = "notifications/initialized"
	NotificationCancelled                 = "notifications/cancelled"
	NotificationProgress                  = "notifications/progress"
	NotificationMessage                   = "notifications/message"
	NotificationToolsListChanged          = "notifications/tools/list_changed"
	NotificationPromptsListChanged        = "notifications/prompts/list_changed"
	NotificationResourcesListChanged      = "notifications/resources/list_changed"
	NotificationResourceUpdated           = "notifications/resources/updated"
	NotificationRootsListChanged          = "notifications/roots/list_changed"
	NotificationElicitationComplete       = "notifications/elicitation/complete"
	NotificationTaskStatus                = "notifications/tasks/status"
	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
)

// The reserved _meta keys ("io.modelcontextprotocol/" is a reserved prefix). The first five are how a modern
// request and its result carry what a legacy session held.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// MetaRelatedTask ties a message to a task (2025-11-25).
	MetaRelatedTask = "io.modelcontextprotocol/related-task"
)

// HTTP header names of the streamable HTTP transport, in their canonical form.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	// HeaderMethod and HeaderName repeat a modern request's method and the tool, prompt or resource it names.
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
	// HeaderParamPrefix starts the headers that mirror a tool's x-mcp-header arguments (modern era).
	HeaderParamPrefix = "Mcp-Param-"
)
