// Projects and their members (role bindings). Users are on their own page (Users.tsx).
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Breadcrumb, BreadcrumbItem, Button, Form, FormGroup, FormSelect, FormSelectOption, Modal, PageSection, Tab, Tabs,
  TabTitleText, TextArea, TextInput, Title, Text, Toolbar, ToolbarContent, ToolbarItem, Label,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { collectionPath, del, get, objectPath, post } from '../api/client';
import type { List, Project, ProjectRole, RoleBinding, User } from '../api/types';
import { useAuth } from '../auth';
import { useProjects } from '../project';
import { Empty, ErrorAlert, formatDate, nameProblem } from '../components/common';
import { DeleteModal } from '../components/Modals';
import { useToasts } from '../components/toasts';
import { GpuShare, QuotaEditor, ShareSummary, useAllInstances } from '../components/ProjectQuota';

export function ProjectsPage() {
  const { isAdmin, user } = useAuth();
  const { projects, error, reload } = useProjects();
  const [tab, setTab] = useState<string | number>('projects');
  const [creating, setCreating] = useState(false);
  const instances = useAllInstances();
  const visible = isAdmin ? projects : projects.filter((p) => user?.projects[p.metadata?.name ?? ''] === 'project-admin');
  return (
    <>
      <PageSection variant="light">
        <Title headingLevel="h1">Projects & Members</Title>
        <Text className="gantry-muted">Projects are tenant boundaries; members get a role in a project.</Text>
      </PageSection>
      <PageSection>
        <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)} mountOnEnter>
          <Tab eventKey="projects" title={<TabTitleText>Projects</TabTitleText>}>
            <ErrorAlert error={error} />
            {isAdmin && <Toolbar><ToolbarContent><ToolbarItem><Button onClick={() => setCreating(true)}>New Project</Button></ToolbarItem></ToolbarContent></Toolbar>}
            <Table aria-label="Projects" variant="compact">
              <Thead><Tr><Th>Name</Th><Th>Display Name</Th><Th>Description</Th><Th>Status</Th><Th>GPUs in use</Th><Th>Creation Date</Th></Tr></Thead>
              <Tbody>
                {visible.map((p) => (
                  <Tr key={p.metadata?.name} data-testid={`project-${p.metadata?.name}`}>
                    <Td><Link to={`/projects/${encodeURIComponent(p.metadata?.name ?? '')}`}>{p.metadata?.name}</Link></Td>
                    <Td>{p.spec?.displayName}</Td>
                    <Td>{p.spec?.description}</Td>
                    <Td><Label isCompact color="green">{p.status?.phase ?? 'Active'}</Label></Td>
                    <Td>{instances ? <ShareSummary project={p} instances={instances} /> : null}</Td>
                    <Td>{formatDate(p.metadata?.creationTimestamp)}</Td>
                  </Tr>
                ))}
              </Tbody>
            </Table>
          </Tab>
        </Tabs>
      </PageSection>
      {creating && <NewProjectModal onClose={() => setCreating(false)} onCreated={() => { setCreating(false); reload(); }} />}
    </>
  );
}

function NewProjectModal({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<unknown>(null);
  const problem = name ? nameProblem(name) : '';
  const create = async () => {
    setError(null);
    try {
      await post(collectionPath('projects'), { apiVersion: 'paas.gantry.dev/v1', kind: 'Project', metadata: { name }, spec: { displayName, description } });
      onCreated();
    } catch (e) { setError(e); }
  };
  return (
    <Modal variant="small" title="New Project" isOpen onClose={onClose}
      actions={[<Button key="c" onClick={create} isDisabled={!name || !!problem}>Create</Button>, <Button key="x" variant="link" onClick={onClose}>Cancel</Button>]}>
      <ErrorAlert error={error} />
      <Form onSubmit={(e) => { e.preventDefault(); void create(); }}>
        <FormGroup label="Name" isRequired fieldId="project-name"><TextInput id="project-name" value={name} onChange={(_e, v) => setName(v.trim())} validated={problem ? 'error' : 'default'} />{problem && <Text className="pf-v5-u-danger-color-100">{problem}</Text>}</FormGroup>
        <FormGroup label="Display Name" fieldId="project-display-name"><TextInput id="project-display-name" value={displayName} onChange={(_e, v) => setDisplayName(v)} /></FormGroup>
        <FormGroup label="Description" fieldId="project-description"><TextArea id="project-description" value={description} onChange={(_e, v) => setDescription(v)} /></FormGroup>
      </Form>
    </Modal>
  );
}

// The GuaranteesOvercommitted condition's message while it is True (docs/fair-share.md).
function overcommitted(p: Project | null): string | undefined {
  return p?.status?.conditions?.find((c) => c.type === 'GuaranteesOvercommitted' && c.status === 'True')?.message;
}

export function ProjectMembers() {
  const { name = '' } = useParams();
  const { isAdmin } = useAuth();
  const toasts = useToasts();
  const [project, setProject] = useState<Project | null>(null);
  const [bindings, setBindings] = useState<RoleBinding[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [users, setUsers] = useState<User[] | null>(null); // null: loading, or not readable
  const [usersReadable, setUsersReadable] = useState(true);
  const [newUser, setNewUser] = useState('');
  const [newRole, setNewRole] = useState<ProjectRole>('member');
  const [removing, setRemoving] = useState<RoleBinding | null>(null);
  const [deletingProject, setDeletingProject] = useState(false);
  const [n, setN] = useState(0);
  useEffect(() => {
    get<Project>(objectPath('projects', undefined, name)).then(setProject).catch(setError);
    get<List<RoleBinding>>(collectionPath('rolebindings', name)).then((l) => { setBindings(l.items); setError(null); }).catch((e) => { setError(e); setBindings([]); });
    if (isAdmin) get<List<User>>(collectionPath('users')).then((l) => setUsers(l.items)).catch(() => setUsersReadable(false));
    else setUsersReadable(false);
  }, [name, n, isAdmin]);
  const add = async () => {
    try {
      await post(collectionPath('rolebindings', name), {
        apiVersion: 'paas.gantry.dev/v1', kind: 'RoleBinding', metadata: { name: `${newUser}-${newRole}`.slice(0, 63) }, spec: { user: newUser, role: newRole },
      });
      toasts.add('success', `${newUser} is now ${newRole} of ${name}`);
      setNewUser('');
      setN(n + 1);
    } catch (e) { toasts.fail(e); }
  };
  return (
    <>
      {toasts.view}
      <PageSection variant="light">
        <Breadcrumb style={{ marginBottom: 8 }}>
          <BreadcrumbItem><Link to="/projects">Projects</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
        <Title headingLevel="h1">{project?.spec?.displayName || name}</Title>
        <Text className="gantry-muted">{project?.spec?.description}</Text>
        {overcommitted(project) && (
          <Alert variant="warning" isInline isPlain title="Guarantees are overcommitted" style={{ marginTop: 8 }}>{overcommitted(project)}</Alert>
        )}
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        {project && <GpuShare project={project} n={n} />}
        {project && isAdmin && <QuotaEditor key={project.metadata?.resourceVersion} project={project}
          onSaved={(p) => { setProject(p); toasts.add('success', `Limits of ${name} saved`); }} />}
        <Title headingLevel="h2" size="lg" style={{ margin: '24px 0 8px' }}>Members</Title>
        {bindings && bindings.length === 0 && !error ? <Empty title="No members yet" /> : (
          <Table aria-label="Members" variant="compact">
            <Thead><Tr><Th>User</Th><Th>Role</Th><Th>Binding</Th><Th screenReaderText="Remove" /></Tr></Thead>
            <Tbody>{(bindings ?? []).map((b) => (
              <Tr key={b.metadata?.name}><Td>{b.spec?.user}</Td><Td><Label isCompact color={b.spec?.role === 'project-admin' ? 'purple' : 'blue'}>{b.spec?.role}</Label></Td><Td>{b.metadata?.name}</Td>
                <Td><Button variant="link" isDanger onClick={() => setRemoving(b)}>Remove</Button></Td></Tr>
            ))}</Tbody>
          </Table>
        )}
        <Title headingLevel="h3" size="md" style={{ margin: '16px 0 8px' }}>Add a member</Title>
        <Form isHorizontal onSubmit={(e) => { e.preventDefault(); void add(); }} style={{ maxWidth: 640 }}>
          <FormGroup label="User" isRequired fieldId="member-user">
            {usersReadable ? (
              <FormSelect id="member-user" value={newUser} onChange={(_e, v) => setNewUser(v)} isDisabled={users === null}>
                <FormSelectOption value="" label={users === null ? 'Loading users…' : 'Choose a user'} isPlaceholder />
                {(users ?? []).map((u) => <FormSelectOption key={u.metadata?.name} value={u.metadata?.name ?? ''} label={u.spec?.displayName ? `${u.spec?.displayName} (${u.metadata?.name})` : u.metadata?.name ?? ''} />)}
              </FormSelect>
            ) : <TextInput id="member-user" value={newUser} onChange={(_e, v) => setNewUser(v.trim())} />}
          </FormGroup>
          <FormGroup label="Role" fieldId="member-role">
            <FormSelect id="member-role" value={newRole} onChange={(_e, v) => setNewRole(v as ProjectRole)}>
              <FormSelectOption value="project-admin" label="Project admin" />
              <FormSelectOption value="member" label="Member (launch and operate instances)" />
              <FormSelectOption value="viewer" label="Viewer (read-only)" />
            </FormSelect>
          </FormGroup>
          <ActionGroup><Button type="submit" isDisabled={!newUser}>Add member</Button></ActionGroup>
        </Form>
        {isAdmin && (
          <>
            <Title headingLevel="h2" size="lg" style={{ margin: '32px 0 8px' }}>Danger zone</Title>
            <Button variant="danger" onClick={() => setDeletingProject(true)}>Delete project</Button>
          </>
        )}
      </PageSection>
      {removing && <DeleteModal kindLabel="role binding" name={removing.metadata?.name ?? ''} extra={`${removing.spec?.user} loses the ${removing.spec?.role} role in ${name}.`}
        onClose={() => setRemoving(null)} onConfirm={async () => { await del(objectPath('rolebindings', name, removing.metadata?.name ?? '')); setRemoving(null); setN(n + 1); }} />}
      {deletingProject && <DeleteModal kindLabel="project" name={name} extra="A project that still holds templates, profiles or instances cannot be deleted."
        onClose={() => setDeletingProject(false)} onConfirm={async () => { await del(objectPath('projects', undefined, name)); window.location.assign('/projects'); }} />}
    </>
  );
}
