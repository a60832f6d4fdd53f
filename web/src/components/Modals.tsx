// Manage Sharing (None / All Projects / Selected Projects) and the typed-name Delete confirmation.
import { useEffect, useState, type ReactNode } from 'react';
import { Button, Checkbox, Form, FormGroup, Modal, Radio, TextInput, Text, HelperText, HelperTextItem } from '@patternfly/react-core';
import { collectionPath, get, patch } from '../api/client';
import type { List, Project, Sharing, SharingMode } from '../api/types';
import { ErrorAlert } from './common';

export function SharingModal({ kindLabel, path, project, name, sharing, onClose, onSaved }: {
  kindLabel: string; path: string; project: string; name: string; sharing?: Sharing;
  onClose: () => void; onSaved: () => void;
}) {
  const [mode, setMode] = useState<SharingMode>(sharing?.mode ?? 'None');
  const [selected, setSelected] = useState<string[]>(sharing?.projects ?? []);
  const [projects, setProjects] = useState<Project[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    get<List<Project>>(collectionPath('projects')).then((l) => setProjects(l.items)).catch(setError);
  }, []);
  const others = projects.filter((p) => p.metadata?.name !== project);
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      await patch(path, { spec: { sharing: mode === 'Selected' ? { mode, projects: selected } : { mode, projects: null } } });
      onSaved();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal variant="small" title="Manage Sharing" isOpen onClose={onClose}
      actions={[
        <Button key="save" variant="primary" onClick={save} isLoading={busy} isDisabled={busy || (mode === 'Selected' && !selected.length)}>Save</Button>,
        <Button key="cancel" variant="link" onClick={onClose}>Cancel</Button>,
      ]}>
      <Text style={{ marginBottom: 16 }}>Choose which other projects may use the {kindLabel} <b>{name}</b>. Shared items are read-only there.</Text>
      <ErrorAlert error={error} />
      <Form onSubmit={(e) => e.preventDefault()}>
        <FormGroup role="radiogroup" fieldId="sharing-mode" label="Share with" isStack>
          <Radio id="share-none" name="sharing-mode" label="None" description="Only this project (the default)." isChecked={mode === 'None'} onChange={() => setMode('None')} />
          <Radio id="share-all" name="sharing-mode" label="All Projects" description="Every project, including ones created later." isChecked={mode === 'All'} onChange={() => setMode('All')} />
          <Radio id="share-selected" name="sharing-mode" label="Selected Projects" isChecked={mode === 'Selected'} onChange={() => setMode('Selected')} />
        </FormGroup>
        {mode === 'Selected' && (
          <FormGroup label="Projects" fieldId="share-projects" isStack>
            {others.length === 0 && <Text>No other projects exist.</Text>}
            {others.map((p) => {
              const n = p.metadata?.name ?? '';
              return (
                <Checkbox key={n} id={`share-project-${n}`} label={p.spec?.displayName ? `${p.spec.displayName} (${n})` : n}
                  isChecked={selected.includes(n)}
                  onChange={(_e, on) => setSelected((s) => (on ? [...s, n] : s.filter((x) => x !== n)))} />
              );
            })}
            {!selected.length && <HelperText><HelperTextItem variant="warning">Select at least one project.</HelperTextItem></HelperText>}
          </FormGroup>
        )}
      </Form>
    </Modal>
  );
}

// `children`: more to say or ask before the name (e.g. the services a compute instance still
// has); `blocked`: why Delete stays disabled even with the name typed.
export function DeleteModal({ kindLabel, name, extra, onClose, onConfirm, children, blocked }: {
  kindLabel: string; name: string; extra?: string; onClose: () => void; onConfirm: () => Promise<void>;
  children?: ReactNode; blocked?: boolean;
}) {
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const go = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Modal variant="small" titleIconVariant="danger" title={`Delete ${kindLabel}?`} isOpen onClose={onClose}
      actions={[
        <Button key="delete" variant="danger" onClick={go} isLoading={busy} isDisabled={typed !== name || busy || blocked}>Delete</Button>,
        <Button key="cancel" variant="link" onClick={onClose}>Cancel</Button>,
      ]}>
      <Text style={{ marginBottom: 12 }}>
        This is a destructive action and <b>cannot be reversed</b>. {extra}
      </Text>
      {children}
      <ErrorAlert error={error} />
      <Form onSubmit={(e) => { e.preventDefault(); if (typed === name && !blocked) void go(); }}>
        <FormGroup label={<>Type <b>{name}</b> to confirm</>} fieldId="confirm-name">
          <TextInput id="confirm-name" value={typed} onChange={(_e, v) => setTyped(v)} autoFocus aria-label="Unique name to confirm" />
        </FormGroup>
      </Form>
    </Modal>
  );
}
