{{/* Chart name, truncated to the 63 characters a label allows. */}}
{{- define "switchboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: release-chart, unless the release name already contains the chart name. */}}
{{- define "switchboard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector of the gateway's pods. */}}
{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{/* Selector of the evaluation Redis pod. */}}
{{- define "switchboard.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end -}}

{{/* Labels of every object, without the component. */}}
{{- define "switchboard.baseLabels" -}}
helm.sh/chart: {{ include "switchboard.chart" . }}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: switchboard
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "switchboard.labels" -}}
{{ include "switchboard.baseLabels" . }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "switchboard.redisLabels" -}}
{{ include "switchboard.baseLabels" . }}
app.kubernetes.io/component: redis
{{- end -}}

{{- define "switchboard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "switchboard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.redisName" -}}
{{- printf "%s-redis" (include "switchboard.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* True (non-empty) when the gateway shares state through Redis. */}}
{{- define "switchboard.redisConfigured" -}}
{{- if or .Values.redis.enabled .Values.redis.url -}}true{{- end -}}
{{- end -}}

{{/*
The environment variables the chart defines for ${VAR} references in config.yaml, name -> source.
Rendered as a list of Kubernetes EnvVar objects.
*/}}
{{- define "switchboard.secretEnv" -}}
{{- $env := list -}}
{{- if .Values.cursorSecret.existingSecret -}}
{{- $env = append $env (dict "name" "SWITCHBOARD_CURSOR_SECRET" "valueFrom" (dict "secretKeyRef" (dict "name" .Values.cursorSecret.existingSecret "key" .Values.cursorSecret.key))) -}}
{{- end -}}
{{- if and .Values.auth.enabled .Values.auth.introspection.enabled -}}
{{- $env = append $env (dict "name" "SWITCHBOARD_INTROSPECTION_CLIENT_SECRET" "valueFrom" (dict "secretKeyRef" (dict "name" (required "auth.introspection.existingSecret is required with auth.introspection.enabled: the Secret holding the introspection client secret" .Values.auth.introspection.existingSecret) "key" .Values.auth.introspection.key))) -}}
{{- end -}}
{{- if and (include "switchboard.redisConfigured" .) .Values.redis.existingSecret -}}
{{- $env = append $env (dict "name" "SWITCHBOARD_REDIS_PASSWORD" "valueFrom" (dict "secretKeyRef" (dict "name" .Values.redis.existingSecret "key" .Values.redis.key))) -}}
{{- end -}}
{{- range $name := keys .Values.secretEnv | sortAlpha -}}
{{- $ref := get $.Values.secretEnv $name -}}
{{- $env = append $env (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $ref.secretName "key" $ref.key))) -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{/* copyKeys DST SRC KEYS: copies the keys of SRC that are set (not null, "", [] or {}; prefix "" is kept) into DST. */}}
{{- define "switchboard.copyKeys" -}}
{{- $dst := index . 0 -}}
{{- $src := index . 1 -}}
{{- range $k := index . 2 -}}
{{- if hasKey $src $k -}}
{{- $v := index $src $k -}}
{{- $isEmpty := or (kindIs "invalid" $v) (and (kindIs "string" $v) (eq $v "") (ne $k "prefix")) (and (or (kindIs "slice" $v) (kindIs "map" $v)) (empty $v)) -}}
{{- if not $isEmpty -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The gateway's config.yaml, built from the values key by key: only keys the gateway knows are copied, so
nothing unknown slips into the file (values.schema.json also rejects unknown keys before rendering).
*/}}
{{- define "switchboard.config" -}}
{{- $v := .Values -}}
{{- $cfg := dict "listen" (printf "0.0.0.0:%d" (int $v.service.port)) -}}
{{- include "switchboard.copyKeys" (list $cfg $v.config (list "publicURL" "allowedOrigins" "allowedHosts" "maxBodyBytes" "pageSize" "requestTimeout" "maxRequestTimeout" "sessionIdleTimeout")) -}}
{{- if $v.cursorSecret.existingSecret -}}
{{- $_ := set $cfg "cursorSecret" "${SWITCHBOARD_CURSOR_SECRET}" -}}
{{- end -}}
{{- $log := dict -}}
{{- include "switchboard.copyKeys" (list $log $v.config.log (list "level" "format")) -}}
{{- if $log }}{{ $_ := set $cfg "log" $log }}{{ end -}}
{{- if $v.auth.enabled -}}
{{- $a := dict "issuer" (required "auth.issuer is required while auth.enabled is true: set it to your authorization server's issuer URL, or set auth.enabled=false to run without authentication (evaluation only)" $v.auth.issuer) -}}
{{- include "switchboard.copyKeys" (list $a $v.auth (list "audience" "scopes" "jwksURL" "algorithms" "clockSkew" "resourceName" "documentationURL")) -}}
{{- if not (or $v.auth.audience $v.config.publicURL) -}}
{{- fail "auth: needs audience (the gateway's canonical MCP URL, such as https://mcp.example.com/mcp), or publicURL to derive it from: set auth.audience or config.publicURL (switchboard check refuses this config)" -}}
{{- end -}}
{{- if $v.auth.introspection.enabled -}}
{{- $i := dict "url" (required "auth.introspection.url is required with auth.introspection.enabled" $v.auth.introspection.url) "clientId" (required "auth.introspection.clientId is required with auth.introspection.enabled" $v.auth.introspection.clientId) "clientSecret" "${SWITCHBOARD_INTROSPECTION_CLIENT_SECRET}" -}}
{{- include "switchboard.copyKeys" (list $i $v.auth.introspection (list "cacheTTL")) -}}
{{- $_ := set $a "introspection" $i -}}
{{- end -}}
{{- $_ := set $cfg "auth" $a -}}
{{- end -}}
{{- if $v.policy -}}
{{- if not $v.auth.enabled -}}
{{- fail "policy needs auth: rules match the claims of verified tokens; set auth.enabled=true and auth.issuer" -}}
{{- end -}}
{{- $rules := list -}}
{{- range $r := $v.policy -}}
{{- $rule := dict -}}
{{- include "switchboard.copyKeys" (list $rule $r (list "name" "allow" "deny")) -}}
{{- if $r.match -}}
{{- $m := dict -}}
{{- include "switchboard.copyKeys" (list $m $r.match (list "sub" "groups" "scopes" "claims")) -}}
{{- $_ := set $rule "match" $m -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- $_ := set $cfg "policy" $rules -}}
{{- end -}}
{{- if include "switchboard.redisConfigured" . -}}
{{- $r := dict "url" (ternary (printf "redis://%s:6379" (include "switchboard.redisName" .)) $v.redis.url $v.redis.enabled) -}}
{{- if $v.redis.existingSecret }}{{ $_ := set $r "password" "${SWITCHBOARD_REDIS_PASSWORD}" }}{{ end -}}
{{- if $v.redis.tls }}{{ $_ := set $r "tls" true }}{{ end -}}
{{- include "switchboard.copyKeys" (list $r $v.redis (list "keyPrefix")) -}}
{{- $_ := set $cfg "redis" $r -}}
{{- /* Several replicas: a stateless client's retry that lands on another pod is forwarded to the one holding the call. */ -}}
{{- $_ := set $cfg "replicaURL" (printf "http://${SWITCHBOARD_POD_IP}:%d/mcp" (int $v.service.port)) -}}
{{- end -}}
{{- $ups := list -}}
{{- range $u := $v.upstreams -}}
{{- $up := dict -}}
{{- include "switchboard.copyKeys" (list $up $u (list "name" "command" "args" "env" "cwd" "url" "headers" "session" "protocol" "prefix" "timeout" "maxInstances" "idleTimeout" "disabled")) -}}
{{- with $u.auth -}}
{{- $ua := dict -}}
{{- with .clientCredentials -}}
{{- $cc := dict -}}
{{- include "switchboard.copyKeys" (list $cc . (list "tokenURL" "clientId" "clientSecret" "scopes" "resource")) -}}
{{- $_ := set $ua "clientCredentials" $cc -}}
{{- end -}}
{{- with .tokenExchange -}}
{{- $te := dict -}}
{{- include "switchboard.copyKeys" (list $te . (list "tokenURL" "clientId" "clientSecret" "audience" "scopes")) -}}
{{- $_ := set $ua "tokenExchange" $te -}}
{{- end -}}
{{- $_ := set $up "auth" $ua -}}
{{- end -}}
{{- $ups = append $ups $up -}}
{{- end -}}
{{- $_ := set $cfg "upstreams" $ups -}}
{{- if $v.endpoints -}}
{{- $eps := list -}}
{{- range $e := $v.endpoints -}}
{{- $ep := dict -}}
{{- include "switchboard.copyKeys" (list $ep $e (list "name" "exclude" "discovery" "alwaysList" "exposeFound")) -}}
{{- /* Kept even when empty: include: [] selects nothing (the gateway refuses it), while no include selects everything. */ -}}
{{- if hasKey $e "include" }}{{ $_ := set $ep "include" $e.include }}{{ end -}}
{{- if hasKey $e "policy" -}}
{{- if not $v.auth.enabled -}}
{{- fail (printf "endpoints: %s's policy needs auth: rules match the claims of verified tokens; set auth.enabled=true and auth.issuer" $e.name) -}}
{{- end -}}
{{- $rules := list -}}
{{- range $r := $e.policy -}}
{{- $rule := dict -}}
{{- include "switchboard.copyKeys" (list $rule $r (list "name" "allow" "deny")) -}}
{{- if $r.match -}}
{{- $m := dict -}}
{{- include "switchboard.copyKeys" (list $m $r.match (list "sub" "groups" "scopes" "claims")) -}}
{{- $_ := set $rule "match" $m -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- $_ := set $ep "policy" $rules -}}
{{- end -}}
{{- $eps = append $eps $ep -}}
{{- end -}}
{{- $_ := set $cfg "endpoints" $eps -}}
{{- end -}}
{{- if $v.overrides -}}
{{- $ovs := dict -}}
{{- range $k, $o := $v.overrides -}}
{{- $ov := dict -}}
{{- include "switchboard.copyKeys" (list $ov $o (list "name" "title" "description" "annotations" "arguments")) -}}
{{- $_ := set $ovs $k $ov -}}
{{- end -}}
{{- $_ := set $cfg "overrides" $ovs -}}
{{- end -}}
{{- $pin := dict -}}
{{- include "switchboard.copyKeys" (list $pin $v.pinning (list "lockFile" "onChange")) -}}
{{- if $v.pinning.stripInvisible }}{{ $_ := set $pin "stripInvisible" true }}{{ end -}}
{{- if $pin }}{{ $_ := set $cfg "pinning" $pin }}{{ end -}}
{{- /* /mcp's discovery settings, and the search index's: rendered only when set (the gateway's defaults otherwise). */ -}}
{{- include "switchboard.copyKeys" (list $cfg $v (list "discovery" "alwaysList")) -}}
{{- if $v.exposeFound }}{{ $_ := set $cfg "exposeFound" true }}{{ end -}}
{{- $search := dict -}}
{{- $sv := $v.search | default dict -}}
{{- $em := $sv.embeddings | default dict -}}
{{- if or $em.url $em.model $em.apiKeyEnv -}}
{{- $e := dict "url" (required "search.embeddings.url is required when search.embeddings is set: an OpenAI-compatible embeddings API, such as https://api.openai.com/v1" $em.url) "model" (required "search.embeddings.model is required when search.embeddings is set: the embedding model's name, such as text-embedding-3-small" $em.model) -}}
{{- with $em.apiKeyEnv -}}
{{- /* Not quoted: a key pasted here by mistake must not reach a log. */ -}}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" .) -}}
{{- fail "search.embeddings.apiKeyEnv is not an environment variable name (letters, digits and _, not starting with a digit): give the NAME of the variable that holds the API key, such as OPENAI_API_KEY, and define it under secretEnv; never the key itself" -}}
{{- end -}}
{{- $_ := set $e "apiKeyEnv" . -}}
{{- end -}}
{{- $_ := set $search "embeddings" $e -}}
{{- end -}}
{{- include "switchboard.copyKeys" (list $search $sv (list "timeout")) -}}
{{- if $search }}{{ $_ := set $cfg "search" $search }}{{ end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* Environment of the gateway container: fixed settings, the secret references, then extraEnv. */}}
{{- define "switchboard.env" -}}
- name: HOME
  value: /tmp
- name: SWITCHBOARD_POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: XDG_CACHE_HOME
  value: /tmp/.cache
- name: npm_config_cache
  value: /tmp/.npm
- name: UV_CACHE_DIR
  value: /tmp/.cache/uv
{{- with .Values.goMaxProcs }}
{{- if eq (toString .) "requests" }}
{{- $res := $.Values.resources | default dict }}
{{- /* Without a request, Kubernetes takes the CPU limit as the request. */ -}}
{{- if not (or (($res.requests | default dict).cpu) (($res.limits | default dict).cpu)) }}
{{- fail "goMaxProcs: requests needs resources.requests.cpu (or limits.cpu): set a CPU request, or give goMaxProcs a whole number" }}
{{- end }}
- name: GOMAXPROCS
  valueFrom:
    resourceFieldRef:
      resource: requests.cpu
      divisor: "1"
{{- else }}
- name: GOMAXPROCS
  {{- /* A number from a values file is a float64: printed as it is, a large one would come out as 1e+06. */}}
  value: {{ ternary . (printf "%d" (int64 .)) (kindIs "string" .) | quote }}
{{- end }}
{{- end }}
{{- with (include "switchboard.secretEnv" . | fromYamlArray) }}
{{ toYaml . }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Fails the render when config.yaml references ${VAR} (without a :-default) and no environment variable of the
container defines VAR, so a missing secret is caught at install instead of by a crash-looping pod.
Skipped when extraEnvFrom may define variables the chart cannot see.
*/}}
{{- define "switchboard.checkEnvRefs" -}}
{{- if not .Values.extraEnvFrom -}}
{{- $defined := list -}}
{{- range $e := (include "switchboard.env" . | fromYamlArray) -}}
{{- $defined = append $defined $e.name -}}
{{- end -}}
{{- $text := include "switchboard.config" . | replace "$$" "" -}}
{{- /* The config's rendering refused an apiKeyEnv that is not a variable name, so it may be quoted here. */ -}}
{{- with ((.Values.search | default dict).embeddings | default dict).apiKeyEnv -}}
{{- if not (has . $defined) -}}
{{- fail (printf "search.embeddings.apiKeyEnv names %s but the container has no environment variable %s: add it under secretEnv (%s: {secretName: ..., key: ...}) or extraEnv" . . .) -}}
{{- end -}}
{{- end -}}
{{- range $ref := regexFindAll "\\$\\{(env:)?[A-Za-z_][A-Za-z0-9_]*\\}" $text -1 | uniq -}}
{{- $name := $ref | trimPrefix "${" | trimSuffix "}" | trimPrefix "env:" -}}
{{- if not (has $name $defined) -}}
{{- fail (printf "config.yaml references %s but the container has no environment variable %s: add it under secretEnv (%s: {secretName: ..., key: ...}) or extraEnv" $ref $name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Combinations of values that would deploy a gateway that cannot work. */}}
{{- define "switchboard.validate" -}}
{{- $multi := or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled -}}
{{- if and $multi (not (include "switchboard.redisConfigured" .)) -}}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs shared session state: set redis.url to your Redis, or redis.enabled=true for an evaluation Redis" -}}
{{- end -}}
{{- if and $multi (not .Values.cursorSecret.existingSecret) -}}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs one cursor signing key for all: create a Secret (kubectl create secret generic switchboard-cursor --from-literal=cursor-secret=$(openssl rand -hex 32)) and set cursorSecret.existingSecret" -}}
{{- end -}}
{{- if and .Values.redis.enabled .Values.redis.url -}}
{{- fail "set either redis.enabled (an evaluation Redis in the release) or redis.url (your Redis), not both" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (lt (int .Values.autoscaling.maxReplicas) (int .Values.autoscaling.minReplicas)) -}}
{{- fail "autoscaling.maxReplicas must be at least autoscaling.minReplicas" -}}
{{- end -}}
{{- include "switchboard.checkEnvRefs" . -}}
{{- end -}}
