{{/* Common labels. */}}
{{- define "svc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: svc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: include "svc.selector" (list . "operator") */}}
{{- define "svc.selector" -}}
app.kubernetes.io/name: svc
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* The image reference every role runs (operator, share pods, auth endpoint). */}}
{{- define "svc.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{- define "svc.operatorName" -}}
{{ .Release.Name }}-operator
{{- end }}

{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "svc.operatorName" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end }}

{{/* The installation's frontend Secret (key oauth.yaml): <release>-frontend or frontend.existingSecret. */}}
{{- define "svc.frontendSecretName" -}}
{{ .Values.frontend.existingSecret | default (printf "%s-frontend" .Release.Name) }}
{{- end }}

{{/* Whether OAuth is configured (values or an existing Secret): deploys the auth endpoint. */}}
{{- define "svc.oauthEnabled" -}}
{{- if or .Values.frontend.existingSecret (not (empty .Values.frontend.oauth)) -}}true{{- end -}}
{{- end }}

{{/* The oauth: section as the frontend reads it; the chart fixes bind_address for the pods' port. */}}
{{- define "svc.oauthSection" -}}
{{- $oauth := mergeOverwrite (deepCopy .Values.frontend.oauth) (dict "bind_address" "0.0.0.0:8080") -}}
{{- toYaml (dict "oauth" $oauth) -}}
{{- end }}

{{/* Share hosts are <token>.<shareDomain>. */}}
{{- define "svc.shareDomain" -}}
{{- $fromCookie := trimPrefix "." (toString (get (default (dict) .Values.frontend.oauth) "cookie_domain")) -}}
{{- .Values.shareDomain | default $fromCookie | required "shareDomain is required (share hosts are <token>.<shareDomain>); set it or frontend.oauth.cookie_domain" -}}
{{- end }}

{{/* Host the auth endpoint's Ingress serves: auth.host or the host of frontend.oauth.endpoint_url. */}}
{{- define "svc.authHost" -}}
{{- $endpoint := toString (get (default (dict) .Values.frontend.oauth) "endpoint_url") -}}
{{- $fromEndpoint := "" -}}
{{- if $endpoint }}{{ $fromEndpoint = (urlParse $endpoint).hostname }}{{ end -}}
{{- .Values.auth.host | default $fromEndpoint | required "auth.host is required with frontend.existingSecret (the host of the oauth endpoint_url)" -}}
{{- end }}

{{/*
The installation's own hosts directly under the share domain, as a JSON list: the auth endpoint's,
the public frontend's endpoint host and the controller API's Ingress host, each when deployed. A
share token equal to such a host's first label would give a tenant's share that host: the operator
(--reserved-host), the controller's share registry (public_frontend.reserved_hosts) and the
admission policy refuse them (lib/share/reserved-tokens.ts).
*/}}
{{- define "svc.reservedHosts" -}}
{{- $domain := include "svc.shareDomain" . -}}
{{- $hosts := list -}}
{{- if include "svc.oauthEnabled" . }}{{ $hosts = append $hosts (include "svc.authHost" .) }}{{ end -}}
{{- if .Values.publicFrontend.enabled }}{{ $hosts = append $hosts (urlParse (include "svc.publicFrontendEndpoint" .)).hostname }}{{ end -}}
{{- if and .Values.controller.enabled .Values.controller.ingress.enabled .Values.controller.ingress.host }}{{ $hosts = append $hosts .Values.controller.ingress.host }}{{ end -}}
{{- $reserved := list -}}
{{- range $hosts }}
{{- $host := lower . -}}
{{- if and (hasSuffix (printf ".%s" $domain) $host) (not (contains "." (trimSuffix (printf ".%s" $domain) $host))) }}{{ $reserved = append $reserved $host }}{{ end -}}
{{- end -}}
{{- toJson (uniq $reserved) -}}
{{- end }}

{{/* The public frontend's name (Deployment, Service, ServiceAccount, Role, config Secret, ...). */}}
{{- define "svc.publicFrontendName" -}}
{{ .Release.Name }}-public-frontend
{{- end }}

{{/* The Secret (key credential) with which the public frontend authenticates to the controller. */}}
{{- define "svc.frontendCredentialSecretName" -}}
{{ .Values.publicFrontend.credential.existingSecret | default (printf "%s-frontend-credential" .Release.Name) }}
{{- end }}

{{/* Where the controller and the public frontend read that credential (a mounted Secret item). */}}
{{- define "svc.frontendCredentialFile" -}}
/etc/svc/frontend/credential
{{- end }}

{{/* The public frontend's endpoint_url, required once it is enabled. */}}
{{- define "svc.publicFrontendEndpoint" -}}
{{- .Values.publicFrontend.endpointUrl | required "publicFrontend.endpointUrl is required with publicFrontend.enabled (the public URL agents open their tunnel to, e.g. https://share.example.com)" -}}
{{- end }}

{{/* Whether the public frontend is deployed; fails when it is enabled without the controller it reads shares from. */}}
{{- define "svc.publicFrontendEnabled" -}}
{{- if .Values.publicFrontend.enabled -}}
{{- if not .Values.controller.enabled -}}
{{- fail "publicFrontend.enabled requires controller.enabled: the public frontend reads the share registry from the controller API (set controller.enabled=true and controller.identity)" -}}
{{- end -}}
true
{{- end -}}
{{- end }}

{{- /* The public frontend's oauth Secret (key oauth.yaml) when OAuth comes from an existing Secret; fails with frontend.existingSecret alone. */ -}}
{{- define "svc.publicFrontendOAuthSecret" -}}
{{- if .Values.publicFrontend.oauthExistingSecret -}}
{{- .Values.publicFrontend.oauthExistingSecret -}}
{{- else if .Values.frontend.existingSecret -}}
{{- fail "publicFrontend with frontend.existingSecret: set publicFrontend.oauthExistingSecret to a Secret whose oauth.yaml is the public frontend's oauth section (endpoint_url = publicFrontend.endpointUrl, bind_address 0.0.0.0:8080), and publicFrontend.providers" -}}
{{- end -}}
{{- end }}

{{- /* Provider names an agent's OAuth share may use at the public frontend (controller public_frontend.providers). */ -}}
{{- define "svc.publicFrontendProviders" -}}
{{- if .Values.publicFrontend.oauthExistingSecret -}}
{{- toJson .Values.publicFrontend.providers -}}
{{- else -}}
{{- $names := list -}}
{{- range (.Values.frontend.oauth.providers | default list) }}{{ $names = append $names .name }}{{ end -}}
{{- toJson $names -}}
{{- end -}}
{{- end }}

{{/*
Settings of the pods the operator writes (share, access and environment-agent pods) as the JSON of
its --pod-settings flag (operator/pod-settings.ts): operator.sharePods, with the chart's
imagePullSecrets and image.pullPolicy when those are left empty. Empty settings are left out.
*/}}
{{- define "svc.sharePodSettings" -}}
{{- $pods := .Values.operator.sharePods -}}
{{- $settings := dict "imagePullPolicy" ($pods.pullPolicy | default .Values.image.pullPolicy) -}}
{{- with ($pods.imagePullSecrets | default .Values.imagePullSecrets) }}{{ $_ := set $settings "imagePullSecrets" . }}{{ end -}}
{{- with $pods.resources }}{{ $_ := set $settings "resources" . }}{{ end -}}
{{- with $pods.nodeSelector }}{{ $_ := set $settings "nodeSelector" . }}{{ end -}}
{{- with $pods.tolerations }}{{ $_ := set $settings "tolerations" . }}{{ end -}}
{{- with $pods.affinity }}{{ $_ := set $settings "affinity" . }}{{ end -}}
{{- with $pods.priorityClassName }}{{ $_ := set $settings "priorityClassName" . }}{{ end -}}
{{- with $pods.podLabels }}{{ $_ := set $settings "labels" . }}{{ end -}}
{{- with $pods.podAnnotations }}{{ $_ := set $settings "annotations" . }}{{ end -}}
{{- toJson $settings -}}
{{- end }}

{{/*
Pod-level extras of one of the chart's Deployments, from its values block (operator, auth,
controller, publicFrontend): priorityClassName and topologySpreadConstraints. Empty when unset.
*/}}
{{- define "svc.podScheduling" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A values tree as a CEL literal that type-checks whatever it holds: every map value and list item
wrapped in dyn() (CEL otherwise infers one value type per literal and refuses mixed ones). Used by
the operator's admission policy to compare a pod's scheduling fields with operator.sharePods.
*/}}
{{- define "svc.celValue" -}}
{{- if kindIs "map" . -}}
{{ "{" }}{{ range $i, $k := keys . | sortAlpha }}{{ if $i }}, {{ end }}{{ toJson $k }}: dyn({{ include "svc.celValue" (get $ $k) }}){{ end }}{{ "}" }}
{{- else if kindIs "slice" . -}}
[{{ range $i, $v := . }}{{ if $i }}, {{ end }}dyn({{ include "svc.celValue" $v }}){{ end }}]
{{- else if kindIs "float64" . -}}
{{ int64 . }}
{{- else -}}
{{ toJson . }}
{{- end -}}
{{- end }}
