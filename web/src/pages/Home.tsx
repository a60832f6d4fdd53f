// Home: what is running, what needs attention (compute and service instances), GPU capacity.
import { useEffect, useMemo, useState } from 'react';
import { Link } from 'react-router-dom';
import { Card, CardBody, CardTitle, Gallery, PageSection, Title, Text, DataList, DataListItem, DataListItemRow, DataListItemCells, DataListCell, Button, Flex, Label } from '@patternfly/react-core';
import { collectionPath, get } from '../api/client';
import { useLiveList } from '../components/liveList';
import type { ComputeInstance, GpuNode, List, ServiceInstance } from '../api/types';
import { useAuth } from '../auth';
import { lastProject } from '../project';
import { Empty, ErrorAlert, Loading, PHASE_TEXT, StatusLabel } from '../components/common';

type Instance = ComputeInstance | ServiceInstance;
const isService = (i: Instance) => i.kind === 'ServiceInstance';
const NO_SELECTORS = {};

function link(i: Instance) {
  return `/p/${encodeURIComponent(i.metadata?.namespace ?? '')}/${isService(i) ? 'services' : 'instances'}/${encodeURIComponent(i.metadata?.name ?? '')}`;
}

// Every instance of `plural` across the projects the user may see; live (watch), so phases
// move without reload. Watched objects carry their kind.
function useLiveAll<T extends Instance>(plural: string, kind: T['kind'], setError: (e: unknown) => void): T[] | null {
  const items = useLiveList<T>(collectionPath(plural), NO_SELECTORS, setError);
  return useMemo(() => items && items.map((i) => ({ ...i, kind })), [items, kind]);
}

export function HomePage() {
  const { isAdmin, user, open } = useAuth();
  const [nodes, setNodes] = useState<GpuNode[]>([]);
  const [error, setError] = useState<unknown>(null);
  const computes = useLiveAll<ComputeInstance>('computeinstances', 'ComputeInstance', setError);
  const services = useLiveAll<ServiceInstance>('serviceinstances', 'ServiceInstance', setError);
  const items = computes;
  const all: Instance[] = [...(computes ?? []), ...(services ?? [])];
  useEffect(() => {
    if (isAdmin) get<List<GpuNode>>(collectionPath('nodes')).then((l) => setNodes(l.items)).catch(() => setNodes([]));
  }, [isAdmin]);

  const byPhase = (p: string) => (items ?? []).filter((i) => (i.status?.phase ?? 'NotDeployed') === p);
  const attention = all.filter((i) => i.status?.phase === 'Failed' || i.status?.phase === 'Waiting' ||
    ((i.status?.deployedGeneration ?? 0) > 0 && (i.status?.deployedGeneration ?? 0) < (i.metadata?.generation ?? 0)));
  const running = all.filter((i) => i.status?.phase === 'Success');
  const servicesUp = (services ?? []).filter((i) => i.status?.phase === 'Success').length;
  const project = lastProject();

  return (
    <>
      <PageSection variant="light">
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }}>
          <div>
            <Title headingLevel="h1">Welcome{user?.displayName && !open ? `, ${user.displayName}` : ''}</Title>
            <Text className="gantry-muted">Compute and service instances across your projects, live.</Text>
          </div>
          {project && <Link to={`/p/${encodeURIComponent(project)}/instances/new`}><Button>New Compute Instance</Button></Link>}
        </Flex>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        {items === null ? <Loading /> : (
          <>
            <Gallery hasGutter minWidths={{ default: '160px' }} style={{ marginBottom: 24 }}>
              {(['Success', 'InProgress', 'Waiting', 'Failed', 'Stopped', 'NotDeployed'] as const).map((p) => (
                <Card key={p} isCompact>
                  <CardTitle>{PHASE_TEXT[p]}</CardTitle>
                  <CardBody><span style={{ fontSize: 32, fontWeight: 600 }} data-testid={`count-${p}`}>{byPhase(p).length}</span></CardBody>
                </Card>
              ))}
              <Card isCompact>
                <CardTitle>Service Instances</CardTitle>
                <CardBody><span style={{ fontSize: 32, fontWeight: 600 }} data-testid="count-services">{servicesUp}</span> <span className="gantry-muted">of {services?.length ?? 0} running</span></CardBody>
              </Card>
              {nodes.map((n) => (
                <Card key={n.metadata?.name} isCompact>
                  <CardTitle>GPUs on {n.metadata?.name}</CardTitle>
                  <CardBody>
                    {Object.entries(n.status?.capacity ?? {}).map(([t, c]) => (
                      <div key={t}><b>{n.status?.allocated?.[t] ?? 0}</b> of {c} {t} in use</div>
                    ))}
                    {!Object.keys(n.status?.capacity ?? {}).length && <span className="gantry-muted">none configured</span>}
                  </CardBody>
                </Card>
              ))}
            </Gallery>
            <Gallery hasGutter minWidths={{ default: '420px' }}>
              <Card>
                <CardTitle>Needs attention</CardTitle>
                <CardBody>
                  {attention.length === 0 ? <Empty title="Nothing needs attention" /> : (
                    <DataList aria-label="Needs attention" isCompact>
                      {attention.map((i) => (
                        <DataListItem key={`${i.kind}/${i.metadata?.namespace}/${i.metadata?.name}`}>
                          <DataListItemRow>
                            <DataListItemCells dataListCells={[
                              <DataListCell key="n"><Link to={link(i)}>{i.metadata?.name}</Link> <span className="gantry-muted">in {i.metadata?.namespace}</span>{isService(i) && <> <Label isCompact color="cyan">service</Label></>}</DataListCell>,
                              <DataListCell key="s"><StatusLabel phase={i.status?.phase} action={i.status?.action} /></DataListCell>,
                              <DataListCell key="r" width={2}>{i.status?.phase === 'Failed' || i.status?.phase === 'Waiting'
                                ? `${i.status?.reason ?? ''}${i.status?.message ? `: ${i.status.message}` : ''}`
                                : 'Unpublished changes: deploy to publish them'}</DataListCell>,
                            ]} />
                          </DataListItemRow>
                        </DataListItem>
                      ))}
                    </DataList>
                  )}
                </CardBody>
              </Card>
              <Card>
                <CardTitle>Running</CardTitle>
                <CardBody>
                  {running.length === 0 ? <Empty title="Nothing is running" /> : (
                    <DataList aria-label="Running" isCompact>
                      {running.map((i) => (
                        <DataListItem key={`${i.kind}/${i.metadata?.namespace}/${i.metadata?.name}`}>
                          <DataListItemRow>
                            <DataListItemCells dataListCells={[
                              <DataListCell key="n"><Link to={link(i)}>{i.spec?.displayName || i.metadata?.name}</Link> <span className="gantry-muted">in {i.metadata?.namespace}</span>{isService(i) && <> <Label isCompact color="cyan">service</Label></>}</DataListCell>,
                              <DataListCell key="o">{/^https?:\/\//.test(i.status?.outputs?.endpoint ?? '')
                                ? <a href={i.status?.outputs?.endpoint} target="_blank" rel="noreferrer">{i.status?.outputs?.endpoint}</a>
                                : <span className="gantry-muted">profile {i.spec?.profileRef?.name}</span>}</DataListCell>,
                            ]} />
                          </DataListItemRow>
                        </DataListItem>
                      ))}
                    </DataList>
                  )}
                </CardBody>
              </Card>
            </Gallery>
          </>
        )}
      </PageSection>
    </>
  );
}
