{{/* Names and labels. */}}
{{- define "magnetar.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "magnetar.labels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "magnetar.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "magnetar.image" -}}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- end -}}

{{/* etcd://m-0.<svc>:2379,... over the metadata StatefulSet's pods. */}}
{{- define "magnetar.metadataUrl" -}}
{{- $full := include "magnetar.fullname" . -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.metadata.replicas) -}}
{{- $hosts = append $hosts (printf "%s-metadata-%d.%s-metadata.%s.svc:2379" $full $i $full $.Release.Namespace) -}}
{{- end -}}
etcd://{{ join "," $hosts }}
{{- end -}}

{{/* A role's config map as PULSAR_PREFIX_<key> variables. */}}
{{- define "magnetar.configEnv" -}}
{{- range $k, $v := . }}
- name: {{ printf "PULSAR_PREFIX_%s" $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/* The Security issue's keys for a broker: token authentication and TLS listeners. */}}
{{- define "magnetar.securityEnv" -}}
{{- if .Values.auth.enabled }}
- name: PULSAR_PREFIX_authenticationEnabled
  value: "true"
- name: PULSAR_PREFIX_authenticationProviders
  value: org.apache.pulsar.broker.authentication.AuthenticationProviderToken
- name: {{ if .Values.auth.publicKey }}PULSAR_PREFIX_tokenPublicKey{{ else }}PULSAR_PREFIX_tokenSecretKey{{ end }}
  value: {{ if .Values.auth.publicKey }}file:///etc/magnetar/token-key/public.key{{ else }}file:///etc/magnetar/token-key/secret.key{{ end }}
- name: PULSAR_PREFIX_authorizationEnabled
  value: {{ .Values.auth.authorization | toString | quote }}
- name: PULSAR_PREFIX_superUserRoles
  value: {{ join "," .Values.auth.superUserRoles | quote }}
- name: PULSAR_PREFIX_proxyRoles
  value: {{ join "," .Values.auth.proxyRoles | quote }}
- name: PULSAR_PREFIX_brokerClientAuthenticationPlugin
  value: org.apache.pulsar.client.impl.auth.AuthenticationToken
- name: PULSAR_PREFIX_brokerClientAuthenticationParameters
  value: file:///etc/magnetar/superuser-token/token
{{- end }}
{{- if .Values.tls.enabled }}
- name: PULSAR_PREFIX_brokerServicePortTls
  value: "6651"
- name: PULSAR_PREFIX_webServicePortTls
  value: "8443"
- name: PULSAR_PREFIX_tlsCertificateFilePath
  value: /etc/magnetar/tls/tls.crt
- name: PULSAR_PREFIX_tlsKeyFilePath
  value: /etc/magnetar/tls/tls.key
- name: PULSAR_PREFIX_tlsTrustCertsFilePath
  value: /etc/magnetar/tls/ca.crt
{{- end }}
{{- end -}}

{{- define "magnetar.securityMounts" -}}
{{- if .Values.auth.enabled }}
- name: token-key
  mountPath: /etc/magnetar/token-key
  readOnly: true
- name: superuser-token
  mountPath: /etc/magnetar/superuser-token
  readOnly: true
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/magnetar/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "magnetar.securityVolumes" -}}
{{- if .Values.auth.enabled }}
- name: token-key
  secret:
    secretName: {{ .Values.auth.signingKeySecret }}
- name: superuser-token
  secret:
    secretName: {{ .Values.auth.superUserTokenSecret }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.secretName }}
{{- end }}
{{- end -}}


{{/* The proxy's side of the Security issue's keys (proxy.conf names). It authenticates
clients itself with the brokers' token key, then speaks to brokers with its own token (a role
in auth.proxyRoles), so brokers authorize the client's role it forwards too; with TLS it
listens on 6651/8443 and dials the brokers' TLS ports, trusting the same CA. */}}
{{- define "magnetar.proxySecurityEnv" -}}
{{- if .Values.auth.enabled }}
- name: PULSAR_PREFIX_authenticationEnabled
  value: "true"
- name: PULSAR_PREFIX_authenticationProviders
  value: org.apache.pulsar.broker.authentication.AuthenticationProviderToken
- name: {{ if .Values.auth.publicKey }}PULSAR_PREFIX_tokenPublicKey{{ else }}PULSAR_PREFIX_tokenSecretKey{{ end }}
  value: {{ if .Values.auth.publicKey }}file:///etc/magnetar/token-key/public.key{{ else }}file:///etc/magnetar/token-key/secret.key{{ end }}
- name: PULSAR_PREFIX_brokerClientAuthenticationPlugin
  value: org.apache.pulsar.client.impl.auth.AuthenticationToken
- name: PULSAR_PREFIX_brokerClientAuthenticationParameters
  value: file:///etc/magnetar/proxy-token/token
{{- end }}
{{- if .Values.tls.enabled }}
- name: PULSAR_PREFIX_servicePortTls
  value: "6651"
- name: PULSAR_PREFIX_webServicePortTls
  value: "8443"
- name: PULSAR_PREFIX_tlsCertificateFilePath
  value: /etc/magnetar/tls/tls.crt
- name: PULSAR_PREFIX_tlsKeyFilePath
  value: /etc/magnetar/tls/tls.key
- name: PULSAR_PREFIX_tlsTrustCertsFilePath
  value: /etc/magnetar/tls/ca.crt
- name: PULSAR_PREFIX_tlsEnabledWithBroker
  value: "true"
- name: PULSAR_PREFIX_brokerClientTrustCertsFilePath
  value: /etc/magnetar/tls/ca.crt
{{- end }}
{{- end -}}

{{- define "magnetar.proxySecurityMounts" -}}
{{- if .Values.auth.enabled }}
- name: token-key
  mountPath: /etc/magnetar/token-key
  readOnly: true
- name: proxy-token
  mountPath: /etc/magnetar/proxy-token
  readOnly: true
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/magnetar/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "magnetar.proxySecurityVolumes" -}}
{{- if .Values.auth.enabled }}
- name: token-key
  secret:
    secretName: {{ .Values.auth.signingKeySecret }}
- name: proxy-token
  secret:
    secretName: {{ .Values.auth.proxyTokenSecret }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.secretName }}
{{- end }}
{{- end -}}
