"""Import cycles between sibling modules of src/: the top-level modules, and the files of each
module folder (a folder's mod.rs re-exports are not counted); and files over 800 lines.

Usage: python3 scripts/file_cycles.py src    (exit status 1 if any; tests/layout.rs runs it)
"""
import os,re,sys
src=sys.argv[1]
def modpath(path):
    rel=os.path.relpath(path,src)[:-3].split(os.sep)
    if rel[-1]=='mod': rel=rel[:-1]
    if rel==['lib'] or rel==['main']: rel=[]
    return rel
files={}
for root,_,fs in os.walk(src):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(root,f); files[tuple(modpath(p))]=p
def resolve(me,is_mod,segs):
    # returns module tuple path referenced (longest existing prefix that is a file)
    if segs[0]=='crate': base=[]; segs=segs[1:]
    else:
        base=list(me)
        while segs and segs[0]=='super':
            base=base[:-1]; segs=segs[1:]
        if segs and segs[0]=='self': segs=segs[1:]
    full=base+segs
    best=None
    for k in range(len(full),0,-1):
        if tuple(full[:k]) in files: best=tuple(full[:k]); break
    return best
edges={}
for mp,p in files.items():
    s=open(p).read()
    s=re.sub(r'//[^\n]*','',s)
    s=s.split('#[cfg(test)]')[0]
    is_mod=p.endswith('mod.rs') or p.endswith('lib.rs')
    for m in re.finditer(r'\b((?:crate|super)(?:::\w+)+)(?:::\{([^}]*)\})?',s):
        segs=m.group(1).split('::')
        names=[segs]
        if m.group(2):
            names=[segs+[x.strip().split('::')[0]] for x in m.group(2).split(',') if x.strip() and x.strip()!='self']
        for sg in names:
            t=resolve(mp,is_mod,sg)
            if t and t!=tuple(mp): edges.setdefault(tuple(mp),set()).add(t)
# sibling edges only: same parent, neither is the parent mod itself
cyc=[]
def sib(a,b): return len(a)==len(b) and a[:-1]==b[:-1]
import itertools
g={a:{b for b in bs if sib(a,b)} for a,bs in edges.items()}
# also count edges into a child of sibling as edge to sibling
for a,bs in edges.items():
    for b in bs:
        if len(b)>len(a) and b[:len(a)-1]==a[:-1] and b[:len(a)]!=a:
            g.setdefault(a,set()).add(b[:len(a)])
# find SCCs
idx={};low={};st=[];on=set();out=[];c=[0]
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in g.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: out.append(comp)
sys.setrecursionlimit(10000)
for v in list(g):
    if v not in idx: sc(v)
for comp in out: print('cycle:', ' <-> '.join('/'.join(x) for x in comp))
long=[(p, n) for p in files.values() for n in [sum(1 for _ in open(p))] if n > 800]
for p, n in sorted(long): print('long file:', os.path.relpath(p, src), n, 'lines > 800')
print(len(out),'file cycles,',len(long),'files over 800 lines')
sys.exit(1 if out or long else 0)
