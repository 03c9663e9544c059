"""Dashboard sessions ended before their time: a sign-out keeps the session's id until the
cookie would have expired, and every worker and replica refuses the cookie from then on.

The cookie itself is signed and carries its team, expiry and id (auth.Credentials.session), so
that only a signed-in request reads this table, by its primary key.
"""

from __future__ import annotations

import time

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import sessionmaker

from .auth import DashboardSession
from .models import EndedSession


def is_ended(make_session: sessionmaker, session: DashboardSession) -> bool:
    with make_session() as db:
        return (
            db.execute(select(EndedSession.session_id).where(EndedSession.session_id == session.session_id)).first()
            is not None
        )


def end(make_session: sessionmaker, session: DashboardSession) -> None:
    """End the session everywhere, and let go of the ids whose cookies have expired."""
    with make_session() as db, db.begin():
        dialect = db.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        db.execute(
            insert(EndedSession)
            .values(session_id=session.session_id, expires_at=session.expires)
            .on_conflict_do_nothing()
        )
        db.execute(delete(EndedSession).where(EndedSession.expires_at < int(time.time())))
