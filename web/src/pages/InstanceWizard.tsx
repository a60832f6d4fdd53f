// New Compute Instance: the seed's wizard. Profile cards (shared-in ones too) → unique name
// (live validation; it cannot change), display name, description → variables → labels and
// annotations → review, then Save Changes (Not Deployed) or Deploy.
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import {
  Button, Card, CardBody, CardHeader, CardTitle, DescriptionList, DescriptionListDescription, DescriptionListGroup,
  DescriptionListTerm, Form, FormGroup, HelperText, HelperTextItem, Label, PageSection, TextArea, TextInput, Title,
  Wizard, WizardFooterWrapper, WizardStep, useWizardContext, Text, Flex, Alert,
} from '@patternfly/react-core';
import { collectionPath, get, objectPath, post, query } from '../api/client';
import type { ComputeInstance, ComputeProfile, EnvironmentTemplate, List } from '../api/types';
import { sharedFrom } from '../api/types';
import { useCurrentProject } from '../project';
import { ErrorAlert, LabelList, Loading, nameProblem, sharingText } from '../components/common';
import { KeyValueEditor, fromPairs, type Pair } from '../components/KeyValueEditor';
import { VariablesForm, variableViews } from '../components/VariablesForm';

function profileKey(p: ComputeProfile) { return `${p.metadata?.namespace}/${p.metadata?.name}`; }

function gpuText(p: ComputeProfile) {
  const r = p.spec?.resources;
  const parts = [];
  if (r?.gpu?.count) parts.push(`${r.gpu.count}× ${r.gpu.type ?? 'GPU'}`);
  if (r?.cpu) parts.push(`${r.cpu} CPU`);
  if (r?.memoryGiB) parts.push(`${r.memoryGiB} GiB`);
  return parts.join(' · ');
}

function ChangeProfile({ profile }: { profile: ComputeProfile }) {
  const { goToStepById } = useWizardContext();
  return (
    <Alert isInline variant="info" isPlain title={<>Compute profile: <b>{profile.spec?.displayName || profile.metadata?.name}</b> ({profile.metadata?.name}, revision {profile.status?.revision})</>}
      actionLinks={<Button variant="link" isInline onClick={() => goToStepById('profile')}>Change Compute Profile</Button>} style={{ marginBottom: 16 }} />
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

export function InstanceWizard() {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const [profiles, setProfiles] = useState<ComputeProfile[] | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [profile, setProfile] = useState<ComputeProfile | null>(null);
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
    get<List<ComputeProfile>>(collectionPath('computeprofiles', project) + '?limit=500')
      .then((l) => setProfiles(l.items)).catch((e) => { setLoadError(e); setProfiles([]); });
  }, [project]);

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
      get<List<ComputeInstance>>(collectionPath('computeinstances', project) + query({ fieldSelector: `metadata.name=${name}` }), ac.signal)
        .then((l) => setNameTaken(l.items.some((i) => i.metadata?.name === name && i.metadata?.namespace === project) ? 'taken' : 'free'))
        .catch(() => { if (!ac.signal.aborted) setNameTaken(''); });
    }, 250);
    return () => { window.clearTimeout(t); ac.abort(); };
  }, [name, project]);

  const views = variableViews(profile, template);
  const submit = async (deploy: boolean) => {
    if (!profile) return;
    setBusy(deploy ? 'deploy' : 'save');
    setError(null);
    const profileNs = profile.metadata?.namespace;
    const body: ComputeInstance = {
      apiVersion: 'paas.gantry.dev/v1', kind: 'ComputeInstance',
      metadata: { name, labels: fromPairs(labels), annotations: fromPairs(annotations) },
      spec: {
        displayName: displayName || undefined, description: description || undefined,
        profileRef: profileNs && profileNs !== project ? { name: profile.metadata?.name ?? '', namespace: profileNs } : { name: profile.metadata?.name ?? '' },
        variables: values,
      },
    };
    try {
      await post(collectionPath('computeinstances', project), body);
      if (deploy) await post(`${objectPath('computeinstances', project, name)}/deploy`);
      navigate(`/p/${encodeURIComponent(project)}/instances/${encodeURIComponent(name)}`);
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
        <Title headingLevel="h1">New Compute Instance</Title>
        <Text className="gantry-muted">In project <b>{project}</b>. Save Changes keeps it Not Deployed; Deploy publishes it at once.</Text>
      </PageSection>
      <PageSection type="wizard" aria-label="New compute instance wizard">
        <Wizard onClose={() => navigate(`/p/${encodeURIComponent(project)}/instances`)} height={640}>
          <WizardStep name="Compute Profile" id="profile" footer={{ isNextDisabled: !profile, nextButtonText: 'Continue' }}>
            <Title headingLevel="h2" size="lg" style={{ marginBottom: 8 }}>Available Compute Profiles</Title>
            <Text style={{ marginBottom: 16 }}>Choose the profile this instance launches. It can be changed until the first deploy.</Text>
            <ErrorAlert error={loadError} />
            {profiles.length === 0 && !loadError && <Text>No compute profiles exist in this project or are shared with it. A PaaS Admin creates them under Compute Profiles.</Text>}
            <div className="gantry-card-grid" role="radiogroup" aria-label="Compute profiles">
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
                        {from && <Label isCompact color="purple">shared from {from}</Label>}
                      </Flex>
                    </CardBody>
                  </Card>
                );
              })}
            </div>
          </WizardStep>
          <WizardStep name="General" id="general" isDisabled={!profile} footer={{ isNextDisabled: !nameOk }}>
            {profile && <ChangeProfile profile={profile} />}
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
              <DescriptionListGroup><DescriptionListTerm>Compute Profile</DescriptionListTerm>
                <DescriptionListDescription>{profile?.spec?.displayName} ({profile?.metadata?.namespace}/{profile?.metadata?.name}, revision {profile?.status?.revision})</DescriptionListDescription></DescriptionListGroup>
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
