// The service instances running on a compute instance (in any project one can see), and the
// compute instance's Destroy and Delete confirmations that offer to cascade: services must be
// destroyed first, so without the cascade the server refuses (409 naming them).
import { useEffect, useState } from 'react';
import { Alert, Button, Checkbox, List as PfList, ListItem, Modal, Text } from '@patternfly/react-core';
import { FOREGROUND_DELETE, collectionPath, del, get, objectPath, post, query } from '../api/client';
import type { List, ServiceInstance } from '../api/types';
import { ErrorAlert, PHASE_TEXT } from './common';
import { DeleteModal } from './Modals';

const onCompute = (project: string, name: string) => (s: ServiceInstance) =>
  s.spec?.computeRef?.name === name && (s.spec.computeRef.namespace || s.metadata?.namespace) === project;

// Services across the projects the user may list (their own project's when that is refused).
export async function servicesOn(project: string, name: string, signal?: AbortSignal): Promise<ServiceInstance[]> {
  const q = query({ fieldSelector: `spec.computeRef.name=${name}` });
  let path = collectionPath('serviceinstances');
  let l: List<ServiceInstance>;
  try {
    l = await get<List<ServiceInstance>>(path + q, signal);
  } catch {
    path = collectionPath('serviceinstances', project);
    l = await get<List<ServiceInstance>>(path + q, signal);
  }
  return l.items.filter(onCompute(project, name));
}

// The list, read again whenever `refresh` changes (the compute instance's resourceVersion: a
// cascade or a service's deploy shows there). No watch of its own: a browser holds at most
// six connections to gantryd across all its tabs, and every watch keeps one open.
// `name` '': none (not a compute instance, or one the user only reads).
export function useServicesOn(project: string, name: string, refresh?: string): ServiceInstance[] | null {
  const [items, setItems] = useState<ServiceInstance[] | null>(null);
  useEffect(() => {
    if (!name) { setItems(null); return; }
    const ac = new AbortController();
    servicesOn(project, name, ac.signal).then(setItems).catch(() => { if (!ac.signal.aborted) setItems([]); });
    return () => ac.abort();
  }, [project, name, refresh]);
  return items;
}

export function serviceName(s: ServiceInstance, project: string) {
  const ns = s.metadata?.namespace ?? '';
  return ns && ns !== project ? `${ns}/${s.metadata?.name}` : s.metadata?.name ?? '';
}

function CascadeChoice({ project, services, verb, checked, onChange }: {
  project: string; services: ServiceInstance[]; verb: string; checked: boolean; onChange: (v: boolean) => void;
}) {
  const n = services.length;
  return (
    <Alert variant="warning" isInline title={`${n} service instance${n === 1 ? '' : 's'} run${n === 1 ? 's' : ''} on this compute instance`} style={{ marginBottom: 12 }} data-testid="cascade-notice">
      <Text>Services must be destroyed before their compute instance. Without that the server refuses.</Text>
      <PfList>
        {services.map((s) => <ListItem key={`${s.metadata?.namespace}/${s.metadata?.name}`}>{serviceName(s, project)} ({PHASE_TEXT[s.status?.phase ?? 'NotDeployed']})</ListItem>)}
      </PfList>
      <Checkbox id="cascade" label={`Also ${verb} its ${n} service${n === 1 ? '' : 's'} (first)`} isChecked={checked} onChange={(_e, v) => onChange(v)} style={{ marginTop: 8 }} />
    </Alert>
  );
}

export function ComputeDeleteModal({ project, name, onClose, onDeleted }: { project: string; name: string; onClose: () => void; onDeleted: () => void }) {
  const [services, setServices] = useState<ServiceInstance[] | null>(null);
  const [cascade, setCascade] = useState(false);
  useEffect(() => { servicesOn(project, name).then(setServices).catch(() => setServices([])); }, [project, name]);
  const has = (services?.length ?? 0) > 0;
  return (
    <DeleteModal kindLabel="compute instance" name={name} blocked={services === null || (has && !cascade)}
      extra="Whatever it deployed is torn down first; then the instance is no longer available to end users."
      onClose={onClose}
      onConfirm={async () => { await del(objectPath('computeinstances', project, name), has && cascade ? FOREGROUND_DELETE : undefined); onDeleted(); }}>
      {has && <CascadeChoice project={project} services={services ?? []} verb="destroy and delete" checked={cascade} onChange={setCascade} />}
    </DeleteModal>
  );
}

// Shown only when the compute instance has services (a destroy without any is not asked about).
export function ComputeDestroyModal({ project, name, services, onClose, onDone }: {
  project: string; name: string; services: ServiceInstance[]; onClose: () => void; onDone: () => void;
}) {
  const [cascade, setCascade] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      await post(`${objectPath('computeinstances', project, name)}/destroy?cascade=true`);
      onDone();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Modal variant="small" titleIconVariant="warning" title="Destroy compute instance?" isOpen onClose={onClose}
      actions={[
        <Button key="destroy" variant="danger" onClick={go} isLoading={busy} isDisabled={!cascade || busy}>Destroy</Button>,
        <Button key="cancel" variant="link" onClick={onClose}>Cancel</Button>,
      ]}>
      <Text style={{ marginBottom: 12 }}>Tears down what <b>{name}</b> deployed; the instance stays, Not Deployed.</Text>
      <CascadeChoice project={project} services={services} verb="destroy" checked={cascade} onChange={setCascade} />
      <ErrorAlert error={error} />
    </Modal>
  );
}
