// Home: what is running, what needs attention, GPU capacity.
import { useEffect, useState } from 'react';
import { Link } from 'react-router-dom';
import { Card, CardBody, CardTitle, Gallery, PageSection, Title, Text, DataList, DataListItem, DataListItemRow, DataListItemCells, DataListCell, Button, Flex } from '@patternfly/react-core';
import { collectionPath, get, watch } from '../api/client';
import type { ComputeInstance, GpuNode, List } from '../api/types';
import { useAuth } from '../auth';
import { lastProject } from '../project';
import { Empty, ErrorAlert, Loading, PHASE_TEXT, StatusLabel } from '../components/common';

function link(i: ComputeInstance) {
  return `/p/${encodeURIComponent(i.metadata?.namespace ?? '')}/instances/${encodeURIComponent(i.metadata?.name ?? '')}`;
}

export function HomePage() {
  const { isAdmin, user, open } = useAuth();
  const [items, setItems] = useState<ComputeInstance[] | null>(null);
  const [nodes, setNodes] = useState<GpuNode[]>([]);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const ac = new AbortController();
    // Across every project the user may see; live (watch), so phases move without reload.
    const seen = new Map<string, ComputeInstance>();
    const key = (i: ComputeInstance) => `${i.metadata?.namespace}/${i.metadata?.name}`;
    let timer: number | undefined;
    const flush = () => { timer = undefined; setItems([...seen.values()]); };
    get<List<ComputeInstance>>(collectionPath('computeinstances') + '?limit=500', ac.signal).then((l) => {
      for (const i of l.items) seen.set(key(i), i);
      flush();
      return watch<ComputeInstance>(collectionPath('computeinstances'), {}, (e) => {
        if (e.type === 'DELETED') seen.delete(key(e.object)); else seen.set(key(e.object), e.object);
        if (timer === undefined) timer = window.setTimeout(flush, 100);
      }, ac.signal, setError, l.metadata?.resourceVersion);
    }).catch((e) => { if (!ac.signal.aborted) { setError(e); setItems([]); } });
    if (isAdmin) get<List<GpuNode>>(collectionPath('nodes')).then((l) => setNodes(l.items)).catch(() => setNodes([]));
    return () => { ac.abort(); if (timer) window.clearTimeout(timer); };
  }, [isAdmin]);

  const byPhase = (p: string) => (items ?? []).filter((i) => (i.status?.phase ?? 'NotDeployed') === p);
  const attention = (items ?? []).filter((i) => i.status?.phase === 'Failed' || i.status?.phase === 'Waiting' ||
    ((i.status?.deployedGeneration ?? 0) > 0 && (i.status?.deployedGeneration ?? 0) < (i.metadata?.generation ?? 0)));
  const running = byPhase('Success');
  const project = lastProject();

  return (
    <>
      <PageSection variant="light">
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} alignItems={{ default: 'alignItemsCenter' }}>
          <div>
            <Title headingLevel="h1">Welcome{user?.displayName && !open ? `, ${user.displayName}` : ''}</Title>
            <Text className="gantry-muted">Compute instances across your projects, live.</Text>
          </div>
          {project && <Link to={`/p/${encodeURIComponent(project)}/instances/new`}><Button>New Compute Instance</Button></Link>}
        </Flex>
      </PageSection>
      <PageSection>
        <ErrorAlert error={error} />
        {items === null ? <Loading /> : (
          <>
            <Gallery hasGutter minWidths={{ default: '160px' }} style={{ marginBottom: 24 }}>
              {(['Success', 'InProgress', 'Waiting', 'Failed', 'NotDeployed'] as const).map((p) => (
                <Card key={p} isCompact>
                  <CardTitle>{PHASE_TEXT[p]}</CardTitle>
                  <CardBody><span style={{ fontSize: 32, fontWeight: 600 }} data-testid={`count-${p}`}>{byPhase(p).length}</span></CardBody>
                </Card>
              ))}
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
                        <DataListItem key={`${i.metadata?.namespace}/${i.metadata?.name}`}>
                          <DataListItemRow>
                            <DataListItemCells dataListCells={[
                              <DataListCell key="n"><Link to={link(i)}>{i.metadata?.name}</Link> <span className="gantry-muted">in {i.metadata?.namespace}</span></DataListCell>,
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
                        <DataListItem key={`${i.metadata?.namespace}/${i.metadata?.name}`}>
                          <DataListItemRow>
                            <DataListItemCells dataListCells={[
                              <DataListCell key="n"><Link to={link(i)}>{i.spec?.displayName || i.metadata?.name}</Link> <span className="gantry-muted">in {i.metadata?.namespace}</span></DataListCell>,
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
