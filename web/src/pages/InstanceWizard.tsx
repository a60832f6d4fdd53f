// New Compute Instance / New Service Instance: the seed's wizard. Profile cards (shared-in ones
// too) → for a service, the compute instance it runs on (this project's or shared into it, only
// those whose compute profile its selector matches, with their status; or auto-create compute)
// → unique name (live validation; it cannot change), display name, description → variables →
// labels and annotations → review, then Save Changes (Not Deployed) or Deploy.
import { useEffect, useMemo, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import {
  Button, Card, CardBody, CardHeader, CardTitle, DescriptionList, DescriptionListDescription, DescriptionListGroup,
  DescriptionListTerm, Form, FormGroup, HelperText, HelperTextItem, Label, PageSection, TextArea, TextInput, Title,
  Wizard, WizardFooterWrapper, WizardStep, useWizardContext, Text, Flex, Alert,
} from '@patternfly/react-core';
import { collectionPath, get, objectPath, post, query, watch } from '../api/client';
import type { ComputeInstance, ComputeProfile, EnvironmentTemplate, List, ServiceInstance, ServiceProfile } from '../api/types';
import { sharedFrom } from '../api/types';
import { useCurrentProject } from '../project';
import { ErrorAlert, LabelList, Loading, StatusLabel, nameProblem, sharingText } from '../components/common';
import { COMPUTE, type InstanceKind } from '../components/instanceActions';
import { selectorMatches, selectorText } from '../components/SelectorEditor';
import { KeyValueEditor, fromPairs, type Pair } from '../components/KeyValueEditor';
import { VariablesForm, variableViews } from '../components/VariablesForm';

type Profile = ComputeProfile | ServiceProfile;
const objKey = (o: { metadata?: { namespace?: string; name?: string } }) => `${o.metadata?.namespace}/${o.metadata?.name}`;
const profileKey = objKey;
const AUTO = 'auto';

function gpuText(p: Profile) {
  if (!('resources' in (p.spec ?? {}))) return '';
  const r = (p as ComputeProfile).spec?.resources;
  const parts = [];
  if (r?.gpu?.count) parts.push(`${r.gpu.count}× ${r.gpu.type ?? 'GPU'}`);
  if (r?.cpu) parts.push(`${r.cpu} CPU`);
  if (r?.memoryGiB) parts.push(`${r.memoryGiB} GiB`);
  return parts.join(' · ');
}

function ChangeProfile({ profile, kind }: { profile: Profile; kind: InstanceKind }) {
  const { goToStepById } = useWizardContext();
  return (
    <Alert isInline variant="info" isPlain title={<>{kind.profileLabel}: <b>{profile.spec?.displayName || profile.metadata?.name}</b> ({profile.metadata?.name}, revision {profile.status?.revision})</>}
      actionLinks={<Button variant="link" isInline onClick={() => goToStepById('profile')}>Change {kind.profileLabel}</Button>} style={{ marginBottom: 16 }} />
  );
}

function ReviewFooter({ busy, onSave, onDeploy }: { busy: string; onSave: () => void; onDeploy: () => void }) {
  const { goToPrevStep, close } = useWizardContext();
  return (
    <WizardFooterWrapper>
      <Button variant="secondary" onClick={goToPrevStep} isDisabled={!!busy}>Back</Button>
      <Button variant="secondary" onClick={onSave} isLoading={busy === 'save'} isDisabled={!!busy}>Save Changes</Button>
      <Button variant="primary" onClick={onDeploy} isLoading={busy === 'deploy'} isDisabled={!!busy}>Deploy</Button>
      <Button variant="link" onClick={close} isDisabled={!!busy}>Cancel</Button>
    </WizardFooterWrapper>
  );
}

export function InstanceWizard({ kind = COMPUTE }: { kind?: InstanceKind }) {
  const isService = kind.kind === 'ServiceInstance';
  const project = useCurrentProject();
  const navigate = useNavigate();
  const [profiles, setProfiles] = useState<Profile[] | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [profile, setProfile] = useState<Profile | null>(null);
  const [computeChoice, setComputeChoice] = useState(''); // '', AUTO or "NAMESPACE/NAME"
  const [template, setTemplate] = useState<EnvironmentTemplate | null>(null);
  const [name, setName] = useState('');
  const [nameTaken, setNameTaken] = useState<'' | 'checking' | 'taken' | 'free'>('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [labels, setLabels] = useState<Pair[]>([]);
  const [annotations, setAnnotations] = useState<Pair[]>([]);
  const [busy, setBusy] = useState('');
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    get<List<Profile>>(collectionPath(kind.profilePlural, project) + '?limit=500')
      .then((l) => setProfiles(l.items)).catch((e) => { setLoadError(e); setProfiles([]); });
  }, [project, kind.profilePlural]);
  const computes = useComputeChoices(isService ? project : '');
  const sp = isService ? profile as ServiceProfile | null : null;
  const canAuto = !!sp?.spec?.autoCreateCompute?.profileRef?.name;
  const matching = computes.items.filter((c) => selectorMatches(sp?.spec?.computeSelector, computes.labelsOf(c)));
  useEffect(() => { setComputeChoice(''); }, [profile]);
  const computeOk = !isService || computeChoice === AUTO ? (!isService || canAuto) : matching.some((c) => objKey(c) === computeChoice);

  useEffect(() => {
    setTemplate(null);
    setValues({});
    if (!profile?.spec?.templateRef?.name) return;
    const ns = profile.spec.templateRef.namespace || profile.metadata?.namespace || project;
    get<EnvironmentTemplate>(objectPath('environmenttemplates', ns, profile.spec.templateRef.name))
      .then(setTemplate).catch(() => setTemplate(null));
  }, [profile, project]);

  // Live validation of the unique name: its syntax here, whether it is taken on the server.
  const problem = name ? nameProblem(name) : '';
  useEffect(() => {
    if (!name || nameProblem(name)) { setNameTaken(''); return; }
    setNameTaken('checking');
    const ac = new AbortController();
    const t = window.setTimeout(() => {
      // A list by name answers 200 either way (a GET of a free name would be a 404 in the console).
      get<List<ComputeInstance>>(collectionPath(kind.plural, project) + query({ fieldSelector: `metadata.name=${name}` }), ac.signal)
        .then((l) => setNameTaken(l.items.some((i) => i.metadata?.name === name && i.metadata?.namespace === project) ? 'taken' : 'free'))
        .catch(() => { if (!ac.signal.aborted) setNameTaken(''); });
    }, 250);
    return () => { window.clearTimeout(t); ac.abort(); };
  }, [name, project, kind.plural]);

  const views = variableViews(profile, template);
  const submit = async (deploy: boolean) => {
    if (!profile) return;
    setBusy(deploy ? 'deploy' : 'save');
    setError(null);
    const ref = (o: { metadata?: { namespace?: string; name?: string } }) => {
      const ns = o.metadata?.namespace;
      return ns && ns !== project ? { name: o.metadata?.name ?? '', namespace: ns } : { name: o.metadata?.name ?? '' };
    };
    const compute = computes.items.find((c) => objKey(c) === computeChoice);
    const body: ServiceInstance = {
      apiVersion: 'paas.gantry.dev/v1', kind: kind.kind,
      metadata: { name, labels: fromPairs(labels), annotations: fromPairs(annotations) },
      spec: {
        displayName: displayName || undefined, description: description || undefined,
        profileRef: ref(profile),
        ...(isService && compute ? { computeRef: ref(compute) } : {}),
        variables: values,
      },
    };
    try {
      await post(collectionPath(kind.plural, project), body);
      if (deploy) await post(`${objectPath(kind.plural, project, name)}/deploy`);
      navigate(`/p/${encodeURIComponent(project)}/${kind.route}/${encodeURIComponent(name)}`);
    } catch (e) {
      setError(e);
      setBusy('');
    }
  };

  if (profiles === null) return <Loading />;
  const nameOk = !!name && !problem && nameTaken === 'free';
  const requiredMissing = views.filter((v) => v.policy !== 'notallowed' && v.required && !v.defaultValue && !values[v.name]);
  return (
    <>
      <PageSection variant="light">
        <Title headingLevel="h1">New {isService ? 'Service' : 'Compute'} Instance</Title>
        <Text className="gantry-muted">In project <b>{project}</b>. Save Changes keeps it Not Deployed; Deploy publishes it at once.</Text>
      </PageSection>
      <PageSection type="wizard" aria-label={`New ${kind.label} wizard`}>
        <Wizard onClose={() => navigate(`/p/${encodeURIComponent(project)}/${kind.route}`)} height={640}>
          <WizardStep name={kind.profileLabel} id="profile" footer={{ isNextDisabled: !profile, nextButtonText: 'Continue' }}>
            <Title headingLevel="h2" size="lg" style={{ marginBottom: 8 }}>Available {kind.profileLabel}s</Title>
            <Text style={{ marginBottom: 16 }}>Choose the profile this instance launches. It can be changed until the first deploy.</Text>
            <ErrorAlert error={loadError} />
            {profiles.length === 0 && !loadError && <Text>No {kind.profileLabel.toLowerCase()}s exist in this project or are shared with it. A PaaS Admin creates them under {kind.profileLabel}s.</Text>}
            <div className="gantry-card-grid" role="radiogroup" aria-label={`${kind.profileLabel}s`}>
              {profiles.map((p) => {
                const id = `profile-${p.metadata?.namespace}-${p.metadata?.name}`;
                const selected = !!profile && profileKey(profile) === profileKey(p);
                const from = sharedFrom(p) || (p.metadata?.namespace !== project ? p.metadata?.namespace : '');
                return (
                  <Card key={profileKey(p)} id={id} isSelectable isSelected={selected} data-testid={`profile-card-${p.metadata?.name}`}>
                    <CardHeader selectableActions={{ selectableActionId: `${id}-input`, selectableActionAriaLabelledby: `${id}-title`, name: 'profile', variant: 'single', isChecked: selected, onChange: () => setProfile(p) }}>
                      <CardTitle id={`${id}-title`}>{p.spec?.displayName || p.metadata?.name}</CardTitle>
                    </CardHeader>
                    <CardBody>
                      <div className="gantry-muted">{p.metadata?.name} · revision {p.status?.revision}</div>
                      <div style={{ margin: '6px 0' }}>{p.spec?.description}</div>
                      <Flex spaceItems={{ default: 'spaceItemsXs' }}>
                        {gpuText(p) && <Label isCompact color="blue">{gpuText(p)}</Label>}
                        {isService && <Label isCompact color="cyan">{(p as ServiceProfile).spec?.serviceType}</Label>}
                        {isService && <Label isCompact color="grey">runs on: {selectorText((p as ServiceProfile).spec?.computeSelector)}</Label>}
                        {isService && (p as ServiceProfile).spec?.autoCreateCompute?.profileRef?.name && <Label isCompact color="green">auto-creates compute</Label>}
                        {from && <Label isCompact color="purple">shared from {from}</Label>}
                      </Flex>
                    </CardBody>
                  </Card>
                );
              })}
            </div>
          </WizardStep>
          {isService && (
            <WizardStep name="Compute Instance" id="compute" isDisabled={!profile} footer={{ isNextDisabled: !computeChoice || !computeOk }}>
              {profile && <ChangeProfile profile={profile} kind={kind} />}
              <Title headingLevel="h2" size="lg" style={{ marginBottom: 8 }}>Where it runs</Title>
              <Text style={{ marginBottom: 16 }}>
                Compute instances of this project or shared into it whose compute profile matches <b>{selectorText(sp?.spec?.computeSelector)}</b>.
                The service deploys once its compute instance is in Success (until then it waits: Compute Not Ready).
              </Text>
              <ErrorAlert error={computes.error} />
              <div className="gantry-card-grid" role="radiogroup" aria-label="Compute instances">
                {canAuto && (
                  <Card id="compute-auto" isSelectable isSelected={computeChoice === AUTO} data-testid="compute-card-auto">
                    <CardHeader selectableActions={{ selectableActionId: 'compute-auto-input', selectableActionAriaLabelledby: 'compute-auto-title', name: 'compute', variant: 'single', isChecked: computeChoice === AUTO, onChange: () => setComputeChoice(AUTO) }}>
                      <CardTitle id="compute-auto-title">Auto-create compute</CardTitle>
                    </CardHeader>
                    <CardBody>
                      <div className="gantry-muted">A dedicated compute instance NAME-compute from profile {sp?.spec?.autoCreateCompute?.profileRef?.name}; deploying the service deploys it too.</div>
                    </CardBody>
                  </Card>
                )}
                {matching.map((c) => {
                  const k = objKey(c);
                  const id = `compute-${c.metadata?.namespace}-${c.metadata?.name}`;
                  const from = c.metadata?.namespace !== project ? c.metadata?.namespace : '';
                  return (
                    <Card key={k} id={id} isSelectable isSelected={computeChoice === k} data-testid={`compute-card-${c.metadata?.name}`}>
                      <CardHeader selectableActions={{ selectableActionId: `${id}-input`, selectableActionAriaLabelledby: `${id}-title`, name: 'compute', variant: 'single', isChecked: computeChoice === k, onChange: () => setComputeChoice(k) }}>
                        <CardTitle id={`${id}-title`}>{c.spec?.displayName || c.metadata?.name}</CardTitle>
                      </CardHeader>
                      <CardBody>
                        <div className="gantry-muted">{c.metadata?.name} · profile {c.spec?.profileRef?.name}</div>
                        <Flex spaceItems={{ default: 'spaceItemsXs' }} style={{ marginTop: 6 }}>
                          <StatusLabel phase={c.status?.phase} action={c.status?.action} />
                          {from && <Label isCompact color="purple">shared from {from}</Label>}
                        </Flex>
                      </CardBody>
                    </Card>
                  );
                })}
              </div>
              {!computes.loading && matching.length === 0 && !canAuto && <Text>No compute instance here matches this service profile. Launch one under Compute Instances first.</Text>}
              {computes.items.length > matching.length && <HelperText style={{ marginTop: 12 }}><HelperTextItem>{computes.items.length - matching.length} other compute instance(s) are not offered: their compute profile does not match.</HelperTextItem></HelperText>}
            </WizardStep>
          )}
          <WizardStep name="General" id="general" isDisabled={!profile || !computeOk} footer={{ isNextDisabled: !nameOk }}>
            {profile && <ChangeProfile profile={profile} kind={kind} />}
            <Form onSubmit={(e) => e.preventDefault()}>
              <FormGroup label="Unique Name" isRequired fieldId="unique-name">
                <TextInput id="unique-name" isRequired value={name} onChange={(_e, v) => setName(v.trim())}
                  validated={problem || nameTaken === 'taken' ? 'error' : nameTaken === 'free' ? 'success' : 'default'} placeholder="gpu-instance-prod" />
                <HelperText>
                  {problem && <HelperTextItem variant="error">{problem}</HelperTextItem>}
                  {!problem && nameTaken === 'taken' && <HelperTextItem variant="error">An instance named {name} already exists in {project}.</HelperTextItem>}
                  {!problem && nameTaken === 'free' && <HelperTextItem variant="success">{name} is available.</HelperTextItem>}
                  {!problem && nameTaken === 'checking' && <HelperTextItem>Checking…</HelperTextItem>}
                  <HelperTextItem variant="indeterminate">Note: the unique name cannot be changed once the instance is created.</HelperTextItem>
                </HelperText>
              </FormGroup>
              <FormGroup label="Display Name" fieldId="display-name">
                <TextInput id="display-name" value={displayName} onChange={(_e, v) => setDisplayName(v)} placeholder="GPU instance (prod)" />
                <HelperText><HelperTextItem>The friendly name end users see.</HelperTextItem></HelperText>
              </FormGroup>
              <FormGroup label="Description" fieldId="description">
                <TextArea id="description" value={description} onChange={(_e, v) => setDescription(v)} rows={3} resizeOrientation="vertical"
                  placeholder="What this instance is for, who operates it, whom to call." />
              </FormGroup>
            </Form>
          </WizardStep>
          <WizardStep name="Variables" id="variables" isDisabled={!nameOk} footer={{ isNextDisabled: requiredMissing.length > 0 }}>
            <Form onSubmit={(e) => e.preventDefault()}>
              <VariablesForm views={views} values={values} onChange={setValues} />
            </Form>
          </WizardStep>
          <WizardStep name="Labels & Annotations" id="metadata" isDisabled={!nameOk || requiredMissing.length > 0}>
            <Form onSubmit={(e) => e.preventDefault()}>
              <FormGroup label="Labels" fieldId="labels">
                <HelperText><HelperTextItem>Key/value pairs for categorising and filtering (environment, project, team); attached to what the instance launches.</HelperTextItem></HelperText>
                <KeyValueEditor id="labels" pairs={labels} onChange={setLabels} addText="Add label" keyPlaceholder="team" valuePlaceholder="llm" />
              </FormGroup>
              <FormGroup label="Annotations" fieldId="annotations">
                <HelperText><HelperTextItem>Descriptive key/value pairs: context for people, not for filtering.</HelperTextItem></HelperText>
                <KeyValueEditor id="annotations" pairs={annotations} onChange={setAnnotations} addText="Add annotation" keyPlaceholder="owner-notes" valuePlaceholder="Page #llm-oncall on failure" />
              </FormGroup>
            </Form>
          </WizardStep>
          <WizardStep name="Review" id="review" isDisabled={!nameOk || requiredMissing.length > 0}
            footer={<ReviewFooter busy={busy} onSave={() => void submit(false)} onDeploy={() => void submit(true)} />}>
            <ErrorAlert error={error} />
            <DescriptionList isHorizontal aria-label="Review">
              <DescriptionListGroup><DescriptionListTerm>{kind.profileLabel}</DescriptionListTerm>
                <DescriptionListDescription>{profile?.spec?.displayName} ({profile?.metadata?.namespace}/{profile?.metadata?.name}, revision {profile?.status?.revision})</DescriptionListDescription></DescriptionListGroup>
              {isService && <DescriptionListGroup><DescriptionListTerm>Compute Instance</DescriptionListTerm>
                <DescriptionListDescription data-testid="review-compute">{computeChoice === AUTO ? `Auto-create ${name}-compute (profile ${sp?.spec?.autoCreateCompute?.profileRef?.name})` : computeChoice}</DescriptionListDescription></DescriptionListGroup>}
              <DescriptionListGroup><DescriptionListTerm>Unique Name</DescriptionListTerm><DescriptionListDescription>{name}</DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Display Name</DescriptionListTerm><DescriptionListDescription>{displayName || '—'}</DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Description</DescriptionListTerm><DescriptionListDescription>{description || '—'}</DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Variables</DescriptionListTerm>
                <DescriptionListDescription>{Object.keys(values).length ? <LabelList map={Object.fromEntries(Object.entries(values).map(([k, v]) => [k, views.find((x) => x.name === k)?.sensitive ? '••••' : v]))} color="grey" /> : 'Profile defaults'}</DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Labels</DescriptionListTerm><DescriptionListDescription><LabelList map={fromPairs(labels)} /></DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Annotations</DescriptionListTerm><DescriptionListDescription><LabelList map={fromPairs(annotations)} color="purple" /></DescriptionListDescription></DescriptionListGroup>
              <DescriptionListGroup><DescriptionListTerm>Sharing</DescriptionListTerm><DescriptionListDescription>{sharingText(undefined)} (change it later with Manage Sharing)</DescriptionListDescription></DescriptionListGroup>
            </DescriptionList>
          </WizardStep>
        </Wizard>
      </PageSection>
    </>
  );
}

// The compute instances a service may run on (this project's and those shared into it), live,
// with the labels of each one's compute profile (what a service profile's selector matches).
function useComputeChoices(project: string) {
  const [items, setItems] = useState<ComputeInstance[]>([]);
  const [profiles, setProfiles] = useState<Record<string, ComputeProfile | null>>({});
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  useEffect(() => {
    if (!project) return;
    const ac = new AbortController();
    const p = collectionPath('computeinstances', project);
    get<List<ComputeInstance>>(p + '?limit=500', ac.signal).then((l) => {
      setItems(l.items);
      setLoading(false);
      return watch<ComputeInstance>(p, {}, (e) => {
        setItems((cur) => {
          const rest = cur.filter((c) => objKey(c) !== objKey(e.object));
          return e.type === 'DELETED' ? rest : [...rest, e.object].sort((a, b) => objKey(a).localeCompare(objKey(b)));
        });
      }, ac.signal, undefined, l.metadata?.resourceVersion);
    }).catch((e) => { if (!ac.signal.aborted) { setError(e); setLoading(false); } });
    get<List<ComputeProfile>>(collectionPath('computeprofiles', project) + '?limit=500', ac.signal)
      .then((l) => setProfiles((cur) => ({ ...cur, ...Object.fromEntries(l.items.map((x) => [objKey(x), x])) }))).catch(() => { /* read one by one below */ });
    return () => ac.abort();
  }, [project]);
  // Profiles not listed here (another project's, used by a shared compute instance): one by one.
  const missing = useMemo(() => [...new Set(items.map((c) => `${c.spec?.profileRef?.namespace || c.metadata?.namespace}/${c.spec?.profileRef?.name}`))]
    .filter((k) => !(k in profiles)), [items, profiles]);
  useEffect(() => {
    for (const k of missing) {
      const [ns, n] = k.split('/');
      get<ComputeProfile>(objectPath('computeprofiles', ns, n)).then((x) => setProfiles((cur) => ({ ...cur, [k]: x })))
        .catch(() => setProfiles((cur) => ({ ...cur, [k]: null })));
    }
  }, [missing]);
  const labelsOf = (c: ComputeInstance) => profiles[`${c.spec?.profileRef?.namespace || c.metadata?.namespace}/${c.spec?.profileRef?.name}`]?.metadata?.labels;
  return { items, labelsOf, error, loading };
}
