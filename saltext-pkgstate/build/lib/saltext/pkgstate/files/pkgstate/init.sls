#!jinja|yaml
{#-
  The package state of this minion, from the pillar the pkgstate ext_pillar
  serves (``pillar['pkgstate']``). One state per managed package, ID
  pkgstate-<policy>-<name>; the same SLS data as
  ``salt-run pkgstate.export minion=<id>`` (saltext.pkgstate.render).

  No pkgstate key means the ext_pillar is not configured or did not run:
  fail rather than apply an empty package state.
#}
{%- set pkgstate = pillar.get('pkgstate') %}
{%- if pkgstate is not mapping or pkgstate.get('packages') is not mapping %}
{{- raise('pkgstate: the pillar has no pkgstate:packages; configure the pkgstate ext_pillar on the master (ext_pillar: [{pkgstate: {}}])') }}
{%- endif %}
{%- set functions = {
      'installed': 'pkg.installed',
      'latest': 'pkg.latest',
      'removed': 'pkg.removed',
      'purged': 'pkg.purged',
      'absent': 'pkg.removed',
    } %}
{%- for name, spec in pkgstate['packages'] | dictsort(true) %}
{%-   set sid = 'pkgstate-' ~ spec['policy'] ~ '-' ~ name %}
{%-   set op = spec.get('op') %}
{%-   set version = spec.get('version') %}
{{ sid | json }}:
  {{ functions[spec['policy']] }}:
    - name: {{ name | json }}
{%-   if op and version %}
    - version: {{ (version if op == '=' else op ~ version) | json }}
{%-   endif %}
{%-   if spec['policy'] == 'installed' and op == '=' and spec.get('hold') is sameas true %}
{{ ('pkgstate-held-' ~ name) | json }}:
  pkg.held:
    - name: {{ name | json }}
    - version: {{ version | json }}
    - require:
      - pkg: {{ sid | json }}
{%-   endif %}
{%- endfor %}
