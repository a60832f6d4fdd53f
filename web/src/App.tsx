// The shell: masthead (project, user), navigation, and the routes of every screen.
import { lazy, Suspense, useState, type ReactNode } from 'react';
import { Link, Navigate, Route, Routes, useLocation, useNavigate } from 'react-router-dom';
import {
  Button, Flex, FormSelect, FormSelectOption, Label, Masthead, MastheadBrand, MastheadContent, MastheadMain,
  MastheadToggle, Nav, NavItem, NavList, Page, PageSidebar, PageSidebarBody, PageToggleButton, SkipToContent,
  Toolbar, ToolbarContent, ToolbarItem, PageSection, Title, Text,
} from '@patternfly/react-core';
import BarsIcon from '@patternfly/react-icons/dist/esm/icons/bars-icon';
import { useAuth } from './auth';
import { lastProject, rememberProject, useProjects } from './project';
import { Loading } from './components/common';
import { LoginPage } from './pages/Login';
import { HomePage } from './pages/Home';
import { InstancesPage } from './pages/Instances';
import { InstanceWizard } from './pages/InstanceWizard';
import { InstanceOverview } from './pages/InstanceOverview';
import { ProfilesPage, ProfileEditor } from './pages/Profiles';
import { ServiceProfilesPage, ServiceProfileEditor } from './pages/ServiceProfiles';
import { SERVICE } from './components/instanceActions';
import { TemplatesPage, TemplateEditor } from './pages/Templates';
import { ProjectsPage, ProjectMembers } from './pages/Projects';
import { AuditPage } from './pages/Audit';
import { ApprovalsPage } from './pages/Approvals';
import { AccountPage } from './pages/Account';
import { UsersPage } from './pages/Users';
import { WebhooksPage } from './pages/Webhooks';
// The Usage page brings the chart library (victory, ~300 kB): loaded when it is first opened.
const UsagePage = lazy(() => import('./pages/Usage').then((m) => ({ default: m.UsagePage })));

function projectOf(pathname: string): string {
  const m = pathname.match(/^\/p\/([^/]+)/);
  return m ? decodeURIComponent(m[1]) : '';
}

function Shell({ children }: { children: ReactNode }) {
  const { user, logout, isAdmin, open } = useAuth();
  const { projects } = useProjects();
  const location = useLocation();
  const navigate = useNavigate();
  const [navOpen, setNavOpen] = useState(true);
  const current = projectOf(location.pathname) || lastProject() || projects[0]?.metadata?.name || '';
  const isOrgAdmin = user?.orgRole === 'org-admin';
  const canManageMembers = isAdmin || Object.values(user?.projects ?? {}).includes('project-admin');

  const switchProject = (p: string) => {
    rememberProject(p);
    const rest = location.pathname.match(/^\/p\/[^/]+\/([^/]+)/)?.[1] ?? 'instances';
    navigate(`/p/${encodeURIComponent(p)}/${rest}`);
  };
  const item = (to: string, text: string, match: string) => (
    <NavItem key={to} isActive={location.pathname === to || location.pathname.startsWith(match)}>
      <Link to={to}>{text}</Link>
    </NavItem>
  );
  const p = encodeURIComponent(current);
  const header = (
    <Masthead>
      <MastheadToggle>
        <PageToggleButton variant="plain" aria-label="Navigation" isSidebarOpen={navOpen} onSidebarToggle={() => setNavOpen(!navOpen)}>
          <BarsIcon />
        </PageToggleButton>
      </MastheadToggle>
      <MastheadMain>
        <MastheadBrand component={(props) => <Link {...props} to="/" className="gantry-brand"><img src="/favicon.svg" alt="" />Gantry PaaS Studio</Link>} />
      </MastheadMain>
      <MastheadContent>
        <Toolbar isFullHeight isStatic>
          <ToolbarContent>
            <ToolbarItem>
              <Flex alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsSm' }} flexWrap={{ default: 'nowrap' }}>
                <label htmlFor="project-select" style={{ color: '#fff', whiteSpace: 'nowrap' }}>Project</label>
                <FormSelect aria-label="Project" id="project-select" value={current} onChange={(_e, v) => switchProject(v)} style={{ minWidth: 260 }}>
                  {!current && <FormSelectOption value="" label="Choose a project" isPlaceholder />}
                  {projects.map((pr) => (
                    <FormSelectOption key={pr.metadata?.name} value={pr.metadata?.name ?? ''} label={pr.spec?.displayName ? `${pr.spec.displayName} (${pr.metadata?.name})` : pr.metadata?.name ?? ''} />
                  ))}
                </FormSelect>
              </Flex>
            </ToolbarItem>
            <ToolbarItem align={{ default: 'alignRight' }}>
              <Flex alignItems={{ default: 'alignItemsCenter' }} spaceItems={{ default: 'spaceItemsSm' }}>
                <span style={{ color: '#fff' }} data-testid="whoami">{user?.displayName || user?.username}</span>
                {user?.orgRole && !open ? <Label color="blue" isCompact>{user.orgRole}</Label> : null}
                {!open && <Button variant="secondary" isInline onClick={() => { void logout().then(() => navigate('/login')); }} style={{ color: '#fff', borderColor: '#fff' }}>Log out</Button>}
              </Flex>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );
  const sidebar = (
    <PageSidebar isSidebarOpen={navOpen}>
      <PageSidebarBody>
        <Nav aria-label="Main">
          <NavList>
            {item('/', 'Home', '/home')}
            {current && item(`/p/${p}/instances`, 'Compute Instances', `/p/${p}/instances`)}
            {current && item(`/p/${p}/services`, 'Service Instances', `/p/${p}/services`)}
            {isAdmin && current && item(`/p/${p}/profiles`, 'Compute Profiles', `/p/${p}/profiles`)}
            {isAdmin && current && item(`/p/${p}/serviceprofiles`, 'Service Profiles', `/p/${p}/serviceprofiles`)}
            {isAdmin && current && item(`/p/${p}/templates`, 'Environment Templates', `/p/${p}/templates`)}
            {current && (isAdmin || user?.projects?.[current] === 'project-admin') && item(`/p/${p}/approvals`, 'Approvals', `/p/${p}/approvals`)}
            {current && (isOrgAdmin || user?.projects?.[current] === 'project-admin') && item(`/p/${p}/webhooks`, 'Webhooks', `/p/${p}/webhooks`)}
            {item('/usage', 'Usage', '/usage')}
            {canManageMembers && item('/projects', 'Projects & Members', '/projects')}
            {isOrgAdmin && item('/users', 'Users', '/users')}
            {isOrgAdmin && item('/webhooks', 'Cluster Webhooks', '/webhooks')}
            {isAdmin && item('/audit', 'Audit Log', '/audit')}
            {!open && item('/account', 'My account', '/account')}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page header={header} sidebar={sidebar} isManagedSidebar={false} mainContainerId="main-content"
      skipToContent={<SkipToContent href="#main-content">Skip to content</SkipToContent>}>
      {children}
    </Page>
  );
}

function OrgAdminOnly({ children }: { children: ReactNode }) {
  const { user } = useAuth();
  if (user?.orgRole === 'org-admin') return <>{children}</>;
  return (
    <PageSection>
      <Title headingLevel="h1">Not available</Title>
      <Text>This screen is for org-admins.</Text>
    </PageSection>
  );
}

function AdminOnly({ children }: { children: ReactNode }) {
  const { isAdmin } = useAuth();
  if (isAdmin) return <>{children}</>;
  return (
    <PageSection>
      <Title headingLevel="h1">Not available</Title>
      <Text>This screen is for PaaS Admins.</Text>
    </PageSection>
  );
}

export function App() {
  const { user, loading } = useAuth();
  const location = useLocation();
  if (loading) return <Loading />;
  if (!user) {
    if (location.pathname === '/login') return <LoginPage />;
    const next = location.pathname + location.search;
    return <Navigate to={`/login${next && next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />;
  }
  return (
    <Shell>
      <Routes>
        <Route path="/login" element={<Navigate to={new URLSearchParams(location.search).get('next') || '/'} replace />} />
        <Route path="/" element={<HomePage />} />
        <Route path="/p/:project/instances" element={<InstancesPage />} />
        <Route path="/p/:project/instances/new" element={<InstanceWizard />} />
        <Route path="/p/:project/instances/:name" element={<InstanceOverview />} />
        <Route path="/p/:project/services" element={<InstancesPage key="services" kind={SERVICE} />} />
        <Route path="/p/:project/services/new" element={<InstanceWizard key="services" kind={SERVICE} />} />
        <Route path="/p/:project/services/:name" element={<InstanceOverview key="services" kind={SERVICE} />} />
        <Route path="/p/:project/serviceprofiles" element={<AdminOnly><ServiceProfilesPage /></AdminOnly>} />
        <Route path="/p/:project/serviceprofiles/new" element={<AdminOnly><ServiceProfileEditor /></AdminOnly>} />
        <Route path="/p/:project/serviceprofiles/:name" element={<AdminOnly><ServiceProfileEditor /></AdminOnly>} />
        <Route path="/p/:project/profiles" element={<AdminOnly><ProfilesPage /></AdminOnly>} />
        <Route path="/p/:project/profiles/new" element={<AdminOnly><ProfileEditor /></AdminOnly>} />
        <Route path="/p/:project/profiles/:name" element={<AdminOnly><ProfileEditor /></AdminOnly>} />
        <Route path="/p/:project/templates" element={<AdminOnly><TemplatesPage /></AdminOnly>} />
        <Route path="/p/:project/templates/new" element={<AdminOnly><TemplateEditor /></AdminOnly>} />
        <Route path="/p/:project/templates/:name" element={<AdminOnly><TemplateEditor /></AdminOnly>} />
        <Route path="/p/:project/approvals" element={<ApprovalsPage />} />
        <Route path="/p/:project/webhooks" element={<WebhooksPage />} />
        <Route path="/webhooks" element={<OrgAdminOnly><WebhooksPage key="cluster" cluster /></OrgAdminOnly>} />
        <Route path="/projects" element={<ProjectsPage />} />
        <Route path="/projects/:name" element={<ProjectMembers />} />
        <Route path="/usage" element={<Suspense fallback={<Loading />}><UsagePage /></Suspense>} />
        <Route path="/audit" element={<AdminOnly><AuditPage /></AdminOnly>} />
        <Route path="/users" element={<OrgAdminOnly><UsersPage /></OrgAdminOnly>} />
        <Route path="/account" element={<AccountPage />} />
        <Route path="*" element={<PageSection><Title headingLevel="h1">Page not found</Title><Text><Link to="/">Go home</Link></Text></PageSection>} />
      </Routes>
    </Shell>
  );
}
